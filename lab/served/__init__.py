"""Experiment 11, from floor to served: measured serving latency against the lab's floors."""
