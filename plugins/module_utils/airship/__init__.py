# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
