#!/usr/bin/env bash
# `make demo`: the example site end to end on the local clusters (started by make).
# Steps: encrypt target's kubeconfig with the demo age key, show `list` and `tree`, preview the plan
# (--check), run the deploy plan, start at `apps`, destroy `apps/settings`, and say what happened.
set -euo pipefail
cd "$(dirname "$0")/.."
site=examples/site
clusters_dir="${PHASEKIT_CLUSTERS_DIR:-$HOME/.cache/phasekit/clusters}"
export SOPS_AGE_KEY_FILE="$PWD/$site/secrets/demo-age.key"
export ANSIBLE_NOCOLOR="${ANSIBLE_NOCOLOR:-0}" ANSIBLE_STDOUT_CALLBACK="${ANSIBLE_STDOUT_CALLBACK:-default}"
export ANSIBLE_CALLBACK_RESULT_FORMAT="${ANSIBLE_CALLBACK_RESULT_FORMAT:-yaml}"
unset KUBECONFIG

banner() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

banner "target's kubeconfig, SOPS-encrypted for the demo age key (the inventory reads only this file)"
recipient=$(sed -n 's/^# public key: //p' "$SOPS_AGE_KEY_FILE")
KUBECONFIG="$clusters_dir/target/admin.kubeconfig" kubectl config view --raw --flatten --minify \
  | sops --encrypt --age "$recipient" --input-type yaml --output-type yaml /dev/stdin \
  > "$clusters_dir/target/admin.enc.yaml.tmp"
mv "$clusters_dir/target/admin.enc.yaml.tmp" "$clusters_dir/target/admin.enc.yaml"
echo "$clusters_dir/target/admin.enc.yaml"

playbook() { ansible-playbook -i "$site/inventory" "$site/site.yml" "$@"; }

banner "the plan, as a table (no cluster contacted, nothing decrypted)"
playbook -e plan_action=list

banner "the plan, as a tree and a Mermaid graph"
playbook -e plan_action=tree

banner "preview the whole plan first (check mode: nothing changes; on new clusters, what earlier phases would create is carried into later ones, and workload01's phases are known after the run: its kubeconfig is a Secret the run makes)"
playbook --check

banner "run the deploy plan across ephemeral, target and workload01"
playbook

banner "start at phase 'apps' (start_at, safe here: every cluster had the earlier phases): they do not run"
playbook -e plan_start_at=apps

banner "what the clusters hold now: the objects the plan applied (its ApplySets' members), on each cluster"
# Every cluster gets its own kinds (only target serves the Widget CRD): the kinds and the set ids come from the
# demo's ApplySet parents (Secrets demo-*), which record them, and the members carry the set's id as a label.
held() {
  local parents ids kinds
  local columns='NAME:.metadata.name,ID:.metadata.labels.applyset\.kubernetes\.io/id'
  columns+=',KINDS:.metadata.annotations.applyset\.kubernetes\.io/contains-group-kinds'
  parents=$(kubectl get secrets -A -l applyset.kubernetes.io/id --no-headers -o custom-columns="$columns" \
    | awk '$1 ~ /^demo-/') || true
  ids=$(awk '{print $2}' <<<"$parents" | paste -sd, -)
  kinds=$(awk '$3 != "<none>" {print $3}' <<<"$parents" | tr ',' '\n' | sort -u | paste -sd, -)
  if [ -z "$ids" ] || [ -z "$kinds" ]; then
    echo "nothing applied by the demo's plan"
    return
  fi
  kubectl get "$kinds" -A -l "applyset.kubernetes.io/part-of in ($ids)" \
    -o custom-columns='KIND:.kind,NAMESPACE:.metadata.namespace,NAME:.metadata.name' || true
}
for c in ephemeral target workload01; do
  echo "--- $c"
  KUBECONFIG="$clusters_dir/$c/admin.kubeconfig" held 2>&1 | sed 's/^/    /'
done

banner "the Helm release apps/settings: values rendered for each workload cluster"
for c in target workload01; do
  echo "--- $c: $(KUBECONFIG="$clusters_dir/$c/admin.kubeconfig" kubectl get configmap settings -n demo-apps \
    -o jsonpath='{.data}')"
  KUBECONFIG="$clusters_dir/$c/admin.kubeconfig" helm list -n demo-apps | sed 's/^/    /'
done

banner "each cluster's run record: the recent runs of the plan, read back from the clusters"
playbook -e plan_action=history

banner "destroy one phase: the Helm release of apps/settings, on every workload cluster"
playbook -e plan_action=destroy -e '{"plan_only": ["apps/settings"]}'

printf '\n\033[1mWhat just happened:\033[0m three real clusters were deployed in order by one plan — kubeconfigs from a file, a SOPS file and a Secret the plan itself published, each resolved once and kept in memory — then listed, drawn, resumed, their run records read back, and one phase destroyed.\n'
