"""ctrlbatch.testing: hypothesis strategies and state machines for users' own invariant tests.

- messages: `messages(cls, version)` draws message objects writable at that version.
"""

from .messages import all_versions, messages, project, struct_of

__all__ = ["all_versions", "messages", "project", "struct_of"]
