"""Trial grids: a model study's axes as data (`spec`), one episode run where the model is
(`episode`), and the run itself, resumable, in-process or on Dask (`run`)."""
