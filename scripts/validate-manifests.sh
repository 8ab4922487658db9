#!/usr/bin/env bash
# Validate the Kubernetes base manifests against the Kubernetes API schema
# (strict: unknown fields fail) with kubernetes-validate from the venv.
#   scripts/validate-manifests.sh            # deploy/k8s/base/*.yaml
#   K8S_VERSION=1.33.0 scripts/validate-manifests.sh
# Cross-references (probes, selectors, ConfigMap keys, the dev overlay) are
# checked by tests/system/test_deploy_manifests.py.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
validate="$root/.venv/bin/kubernetes-validate"
version="${K8S_VERSION:-1.37.0}"
if [[ ! -x "$validate" ]]; then
  echo "kubernetes-validate not found in .venv: .venv/bin/pip install kubernetes-validate" >&2
  exit 2
fi
shopt -s nullglob
files=()
for f in "$root"/deploy/k8s/base/*.yaml; do
  # kustomization.yaml is kustomize's, not an API object: no schema to check.
  [[ "$(basename "$f")" == kustomization.yaml ]] || files+=("$f")
done
if (( ${#files[@]} == 0 )); then
  echo "no manifests under deploy/k8s/base" >&2
  exit 2
fi
exec "$validate" --strict --kubernetes-version "$version" "${files[@]}"
