"""Lab 02, `notebooks/02_decision_loop.ipynb`: the runtime's stop reasons, and a language model
behind the same runtime on the constraint ladder: its policy (`model_policy`), recorded trials
(`trials`, `evaluation`), what they add up to (`tables`, `ladder`), the baselines (`baselines`)
and the lab's checkers (`checks`).
"""
