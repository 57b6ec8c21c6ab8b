"""The controller: a small context (lock, epoch, fenced writes) and one module per duty.

See :mod:`.controller` for the map of modules. Public surface: :class:`Controller` and
the errors its requests raise.
"""

from odradek.cluster.controller.controller import Controller, PartitionResults
from odradek.cluster.controller.errors import ControllerMoved, NotController

__all__ = ["Controller", "ControllerMoved", "NotController", "PartitionResults"]
