"""The substituted derivations: a record → the steps shown to a reader."""
