"""Drivers: the threads that run the sans-IO machine against a real transport.

Also the poll thread's work behind ``kgroup.Consumer``: steps, look-ups, the poll loop, closing.
"""
