"""The sink's write: a task's path on an executor, the driver's commit and abort, and what they share."""
