# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Coordination of a run's slices (AWX job slicing, or ``plan_slice`` by hand): which slice this is and which hosts it
gets (``slices``), and how the slices meet through a coordination cluster's API (``meeting``: presence Leases,
barriers, a shared verdict, shared facts; its docstring is the design note). Plain Python, no Ansible: the runner
calls it."""
