#!/usr/bin/env bash
# Walks the Flux-orchestrated MetalLB L2 -> Cilium L2 cutover (LoadBalancerAnnouncer
# `orchestrate`) on a disposable cluster, and records each gate and the ARP-less window.
# Not run by the test suite: it needs a live cluster, Flux and a git remote Flux pulls from.
#
# Prerequisites (you set them up; kind or k3d both work):
# - KUBECONFIG points at a throwaway cluster with Cilium >= 1.15 (kubeProxyReplacement: true,
#   installed by a Flux HelmRelease in the package), MetalLB in L2 mode (a Flux HelmRelease, an
#   IPAddressPool and an L2Advertisement in the package) and at least one LoadBalancer Service
#   with an IP; kind/k3d need an address range on the node network for MetalLB.
# - Flux installed; a GitRepository SOURCE_NAME (namespace flux-system) that pulls REPO, and a
#   Kustomization PLATFORM_KS that applies PKG (a directory of REPO, without kustomization.yaml
#   or with one that does not list the payload directory).
# - kpt, kubectl, flux, git and this build's `cutover` on PATH; the cutover image pushed where
#   the cluster can pull it (CUTOVER_IMAGE, pinned by digest), and an image with /bin/sh and
#   kubectl the cluster can pull (KUBECTL_IMAGE, pinned by digest; Sylva's kube-job image is one).
#
# Usage: REPO=~/src/platform PKG=clusters/kind SOURCE_NAME=platform PLATFORM_KS=platform \
#        CUTOVER_IMAGE=registry.example/cutover@sha256:... \
#        KUBECTL_IMAGE=registry.example/kube-job:v1.2.1@sha256:... scripts/live-orchestrated-cutover.sh
set -euo pipefail

: "${REPO:?path of the git checkout Flux pulls}"
: "${PKG:?package directory inside REPO}"
: "${SOURCE_NAME:?the Flux GitRepository of REPO}"
: "${PLATFORM_KS:?the Flux Kustomization that applies PKG}"
: "${CUTOVER_IMAGE:?the cutover image the gate Jobs copy the binary from, pinned by digest}"
: "${KUBECTL_IMAGE:?the gate container image (/bin/sh and kubectl), pinned by digest}"
CILIUM_VERSION=${CILIUM_VERSION:-}
LOG=${LOG:-$(mktemp -d)/live-orchestrated-cutover.log}
PAYLOAD=cilium-l2-cutover
LIVE="services,nodes,pods,leases.coordination.k8s.io,ciliumloadbalancerippools.cilium.io,ciliuml2announcementpolicies.cilium.io"

log() { printf '%s %s\n' "$(date -u +%H:%M:%S.%3N)" "$*" | tee -a "$LOG"; }

config() { # $1: step
  {
    printf 'apiVersion: fn.cutover.dev/v1alpha1\nkind: LoadBalancerAnnouncer\nmetadata:\n  name: announcer\n'
    printf '  annotations:\n    config.kubernetes.io/local-config: "true"\nspec:\n  announcer: cilium\n'
    [ -n "$CILIUM_VERSION" ] && printf '  ciliumVersion: %s\n' "$CILIUM_VERSION"
    printf '  orchestrate:\n    step: %s\n    cutoverImage: %s\n' "$1" "$CUTOVER_IMAGE"
    printf '    kubectlImage: %s\n' "$KUBECTL_IMAGE"
    printf '    source:\n      sourceRef: {kind: GitRepository, name: %s, namespace: flux-system}\n' "$SOURCE_NAME"
    printf '      path: ./%s/%s\n' "$PKG" "$PAYLOAD"
  } > "$REPO/$PKG/.cutover-fn-config.yaml"
}

render_commit_push() { # $1: step, $2: message
  config "$1"
  kpt fn eval "$REPO/$PKG" --exec cutover --fn-config "$REPO/$PKG/.cutover-fn-config.yaml" \
    --results-dir "$(dirname "$LOG")/results-$1"
  rm -f "$REPO/$PKG/.cutover-fn-config.yaml"
  git -C "$REPO" add -A "$PKG"
  git -C "$REPO" commit -qm "$2"
  git -C "$REPO" push -q
  flux reconcile kustomization "$PLATFORM_KS" --with-source
}

ready() { # $1: kustomization name -> exit 0 when Ready=True
  [ "$(kubectl -n flux-system get kustomization "$1" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

log "log: $LOG"
kubectl get "$LIVE" -A -o yaml | cutover observe > "$REPO/$PKG/observed.yaml"
cp "$REPO/$PKG/observed.yaml" "$(dirname "$LOG")/plan.yaml"
log "observed state exported; plan kept at $(dirname "$LOG")/plan.yaml"

render_commit_push handover "LB cutover: hand-over (prune disabled)"
log "hand-over applied; live annotations:"
kubectl get svc -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {.metadata.annotations.kustomize\.toolkit\.fluxcd\.io/prune}{"\n"}{end}' | tee -a "$LOG"

render_commit_push chain "LB cutover: Flux chain"
log "chain committed"

# Follow the chain: each Kustomization's Ready, and the speaker pods and Leases between them.
for phase in prepare stop-speaker cutover; do
  ks="$PAYLOAD-$phase"
  until ready "$ks"; do
    if [ "$phase" = stop-speaker ]; then
      log "speaker pods: $(kubectl get pods -A -l app.kubernetes.io/component=speaker --no-headers 2>/dev/null | wc -l)"
    fi
    sleep 2
  done
  log "$ks Ready"
  kubectl get "$LIVE" -A -o yaml | cutover verify "$phase" --plan "$(dirname "$LOG")/plan.yaml" | tee -a "$LOG" || true
  kubectl -n "$PAYLOAD" logs -l "app.kubernetes.io/component=gate-$phase" --tail=20 | tee -a "$LOG" || true
done
log "Leases:"
kubectl -n kube-system get leases | grep cilium-l2announce | tee -a "$LOG" || true

# The cleanup: prune: disabled off MetalLB's objects, applied, then MetalLB removed.
render_commit_push cleanup-handover "LB cutover: cleanup hand-over (prune no longer disabled)"
flux reconcile kustomization "$PAYLOAD-stop-speaker" --with-source
log "MetalLB release annotations (no prune: disabled expected):"
kubectl get helmreleases.helm.toolkit.fluxcd.io -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {.metadata.annotations.kustomize\.toolkit\.fluxcd\.io/prune}{"\n"}{end}' | tee -a "$LOG"
render_commit_push cleanup "LB cutover: cleanup (MetalLB removed)"
until ready "$PAYLOAD-cleanup"; do sleep 2; done
log "$PAYLOAD-cleanup Ready"
metallb=""
for r in ipaddresspools.metallb.io l2advertisements.metallb.io; do
  kubectl get "$r" -A -o name >/dev/null 2>&1 && metallb="$metallb,$r"
done
kubectl get "$LIVE$metallb" -A -o yaml | cutover verify cleanup --plan "$(dirname "$LOG")/plan.yaml" | tee -a "$LOG" || true
log "done. The ARP-less window: from the first speaker pod's exit to the first Lease's acquireTime"
log "(and, on the L2 segment, tcpdump -n arp and host <VIP> from the speaker's stop to Cilium's GARP)."
