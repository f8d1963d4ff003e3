#!/usr/bin/env bash
# Renders each kustomize overlay of deploy/k8s into deploy/k8s/rendered/<overlay>.yaml with
# `kubectl kustomize` (kustomize built into kubectl), so the manifests can be read, diffed in review
# and applied where kustomize is not at hand. libs/testing/src/kubernetes.spec.ts validates the
# rendered files and fails when one is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v kubectl >/dev/null || { echo "kubectl not found: it renders the overlays (kubectl kustomize)" >&2; exit 1; }
for dir in deploy/k8s/overlays/*/; do
  overlay=$(basename "$dir")
  {
    echo "# Rendered from deploy/k8s/overlays/$overlay by \`npm run k8s:render\` (kubectl kustomize): do not edit."
    kubectl kustomize "$dir"
  } > "deploy/k8s/rendered/$overlay.yaml"
  echo "deploy/k8s/rendered/$overlay.yaml: $(grep -c '^kind:' "deploy/k8s/rendered/$overlay.yaml") objects"
done
