"""The Kubernetes side: a small REST client for the objects the operator owns."""
