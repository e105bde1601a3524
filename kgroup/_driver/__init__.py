"""Drivers: the threads that run the sans-IO machine against a real transport."""
