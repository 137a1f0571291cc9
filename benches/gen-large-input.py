#!/usr/bin/env python3
"""Writes a large ResourceList for benchmarks: N copies of a small package (Service,
Deployment, ConfigMap per copy), appended to the items of BASE when given (a ResourceList as
`kpt fn source PKG --fn-config FILE` writes it, so that a real mode runs on a large input),
else with a LoadBalancerAnnouncer config.

Usage: benches/gen-large-input.py [N] [BASE] > large.yaml   (default N=3000, ~9000 items)
"""
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
base = open(sys.argv[2]).read() if len(sys.argv) > 2 else None
out = sys.stdout
if base is None:
    out.write("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
else:
    head, sep, tail = base.partition("\nitems:\n")
    if not sep:
        sys.exit("BASE has no top-level block `items:` list")
    out.write(head + sep)
for i in range(n):
    ns = f"tenant-{i % 50}"
    out.write(f"""- apiVersion: v1
  kind: Service
  metadata:
    name: svc-{i}
    namespace: {ns}
    annotations:
      metallb.universe.tf/address-pool: pool-{i % 7}
      config.kubernetes.io/path: 'svc/svc-{i}.yaml'
      config.kubernetes.io/index: '0'
  spec:
    type: LoadBalancer
    selector:
      app: app-{i}
    ports:
    - name: https
      port: 443
      targetPort: 8443
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: app-{i}
    namespace: {ns}
    labels:
      app: app-{i}
    annotations:
      config.kubernetes.io/path: 'deploy/app-{i}.yaml'
      config.kubernetes.io/index: '0'
  spec:
    replicas: 2
    selector:
      matchLabels:
        app: app-{i}
    template:
      metadata:
        labels:
          app: app-{i}
      spec:
        containers:
        - name: app
          image: registry.example/app:{i}.0.0
          args: ["--port=8443", "--log-level=info"]
          resources:
            requests: {{cpu: 10m, memory: 32Mi}}
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cfg-{i}
    namespace: {ns}
    annotations:
      config.kubernetes.io/path: 'cfg/cfg-{i}.yaml'
      config.kubernetes.io/index: '0'
  data:
    settings.yaml: |
      replicas: 2
      note: "entry {i} with unicode é ü"
""")
if base is not None:
    out.write(tail)
    sys.exit(0)
out.write("""functionConfig:
  apiVersion: fn.cutover.dev/v1alpha1
  kind: LoadBalancerAnnouncer
  metadata:
    name: cutover
  spec:
    announcer: metallb
""")
