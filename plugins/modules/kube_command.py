# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""Documentation of the phasekit.kube.kube_command action (the work is done in plugins/action/kube_command.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: kube_command
short_description: Run a command with KUBECONFIG set to this host's cluster
version_added: 0.1.0
description:
  - Runs a command on the Ansible controller (clusterctl, helm, kubectl, any tool that reads C(KUBECONFIG))
    against the cluster of the current inventory host.
  - The host's kubeconfig is resolved like every action of this collection does it (once per run, reused
    afterwards), written as a single-context, flattened kubeconfig to a fresh private directory (mode 0700)
    as a file of mode 0600, and the directory is removed when the command ends, also when it fails, times out
    or cannot be started. C(KUBECONFIG) points at that file, whatever O(env) says.
  - The executor of C(command) phases of the C(phasekit.kube.plan) role.
  - The command is not run in check mode (its effect cannot be predicted); the task reports C(skipped).
  - What the command prints is masked in the result and the message (C(***)) wherever it holds a credential of
    the kubeconfig it was given (token, password, client key and certificate, base64 or decoded, auth-provider
    and exec secrets), in any form it may be printed in (each line, base64, escaped); see docs/troubleshooting.md.
options:
  argv:
    description: The command as a list of arguments, run without a shell. Exactly one of O(argv) and O(cmd).
    type: list
    elements: str
  cmd:
    description:
      - The command as a string, split like a shell would split it (quotes respected) and run without a shell,
        unless O(shell=true).
    type: str
  shell:
    description: Run O(cmd) with C(/bin/sh -c), for pipes and redirections.
    type: bool
    default: false
  chdir:
    description: Directory to run the command in.
    type: path
  env:
    description: Environment variables added to the controller's environment for the command.
    type: dict
    default: {}
  stdin:
    description: Text written to the command's standard input.
    type: str
  timeout:
    description: Seconds after which the command is killed and the task fails.
    type: int
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: none
    details: The command is not run in check mode; the task is reported as skipped.
  diff_mode:
    support: none
  platform:
    platforms: posix
  action_group:
    support: full
    membership:
      - phasekit.kube.kube
extends_documentation_fragment:
  - phasekit.kube.kubeconfig
  - phasekit.kube.connection
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - ansible.builtin.action_common_attributes.actiongroups
seealso:
  - module: phasekit.kube.phase_plan
  - module: ansible.builtin.command
author:
  - phasekit.kube contributors (@phasekit)
notes:
  - The command's output is returned as it is. A command that prints secrets (for example
    C(kubectl config view --raw)) puts them in the task result; use C(no_log) on such tasks.
"""

EXAMPLES = r"""
- name: Move Cluster API objects from the ephemeral cluster to the target cluster
  phasekit.kube.kube_command:
    argv: [clusterctl, move, --to-kubeconfig, /dev/null, --dry-run]

- name: Install a chart
  phasekit.kube.kube_command:
    cmd: helm upgrade --install ingress ingress-nginx --repo https://kubernetes.github.io/ingress-nginx
    timeout: 600

- name: Pipe through the shell
  phasekit.kube.kube_command:
    cmd: kubectl get nodes -o name | wc -l
    shell: true
  register: nodes
"""

RETURN = r"""
cmd:
  description: The argument vector that was run.
  returned: always
  type: list
  elements: str
  sample: [kubectl, get, nodes]
rc:
  description: The command's exit code.
  returned: when the command ran
  type: int
stdout:
  description: Standard output.
  returned: when the command ran
  type: str
stderr:
  description: Standard error.
  returned: when the command ran
  type: str
stdout_lines:
  description: RV(stdout) split into lines.
  returned: when the command ran
  type: list
  elements: str
stderr_lines:
  description: RV(stderr) split into lines.
  returned: when the command ran
  type: list
  elements: str
kubeconfig:
  description: Which context, cluster, server and user the command used, and where they came from (no secrets).
  returned: when the command ran
  type: dict
"""
