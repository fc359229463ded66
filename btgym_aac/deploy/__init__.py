"""Deploying a trained policy: the policy artifact, its runtime, live feeds and trading."""
