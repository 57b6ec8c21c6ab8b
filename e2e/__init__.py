"""End-to-end tests on a real Kubernetes cluster (see README.md in this folder)."""
