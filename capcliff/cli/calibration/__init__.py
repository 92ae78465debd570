"""`capcliff calibrate`'s views: a start-up log against the prediction (`render_log`), step-time
terms fitted to benchmark results (`bench`), and a speculative deployment's acceptance length
(`acceptance`)."""
