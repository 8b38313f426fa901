"""The classroom kit: a learner's work as data (`submission`), the class round that merges a folder
of submissions (`merge`), and `labkit rerun` (`rerun`, papermill). Nothing here runs a submission."""
