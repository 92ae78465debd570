"""The requests a simulation serves: length distributions, arrival processes, closed-loop
clients' sessions and traces, and the rules that check them. Imports nothing of the simulator."""
