"""Experiment 12, plan a deployment: experiment 11's calibrated predictions over a model × GPU
× budget × engine × workload's whole configuration space, and the configuration to run."""
