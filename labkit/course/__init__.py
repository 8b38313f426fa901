"""The course wing: the CLI (`cli`, `commands`), the class round (`classroom`), trial grids
(`grid`), the setup check, student copies and JupyterLab settings. No lab module imports it."""
