"""The course wing: the CLI (`cli`, `commands`), the class round (`classroom`), trial grids
(`grid`), the setup check, student copies and JupyterLab settings. No lab module imports it.

Its face is what `notebooks/00_start_here.ipynb` imports, each name loaded on first use (the CLI, which
reaches into one module here, pays for none of them):

- the setup check: `report` (a table of what this machine has for the course) and `ready` (whether
  every row a lab needs is ok)
- the model a lab would use now: `backend_from_env` (from `LABKIT_MODEL`)
- the class round: `submit` (a learner's submission file)
"""

from labkit.core.face import face

__all__, __getattr__, __dir__ = face(
    globals(),
    {
        "labkit.model.factory": "backend_from_env",
        "classroom.submission": "submit",
        "setup_check": "ready report",
    },
)
