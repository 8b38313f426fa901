"""Lab 02: a language model behind the runtime on the constraint ladder (`model_policy`), its
recorded trials (`trials`, `evaluation`), their tables (`tables`, `ladder`), `baselines`, `checks`."""
