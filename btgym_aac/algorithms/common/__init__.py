"""Helpers that the learner, the actors, the policies and the networks share; they import nothing above them.

Experience and its training targets (`rollout`: `Rollout`, returns, pixel-control targets; `memory.Memory`),
nested batches (`batches`), graph inputs (`placeholders`), math (`math_utils`), sessions (`sessions`: their options
and cached callables), weight copies between graphs (`transfers`) and the non-finite loss check (`finite_guard`).
"""
