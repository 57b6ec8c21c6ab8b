"""Pure manifest builders: spec in, Kubernetes object dicts out."""
