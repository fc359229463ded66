"""Helpers that the learner, the actors, the policies and the networks share; they import nothing above them.

Experience (`rollout.Rollout`, `memory.Memory`), nested batches (`batches`), graph inputs (`placeholders`), math on
arrays (`math_utils`, `pixel_control`), session calls and settings (`session_callables`, `session_config`), weight
copies between graphs (`transfers`) and the non-finite loss check (`finite_guard`).
"""
