"""Compiled copies of the simulator's event loop (`capcliff.sim.core`), built at install."""
