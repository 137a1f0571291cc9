//! Items no mode reads, shaped like the bulk of a real platform repository: Deployments with long
//! pod specs, ConfigMaps with large data, HelmReleases of other charts with their values, and
//! CustomResourceDefinitions. Proportions per 20 items: 12 Deployments, 5 ConfigMaps, 2
//! HelmReleases, 1 CRD (a hydrated platform repository is mostly workloads and their
//! configuration; charts' CRDs are few but large).

use std::fmt::Write;

use super::{Rng, kpt_annotations, ns_name};

/// Writes `count` pass-through items spread over `namespaces` tenant namespaces.
pub(super) fn write_pass_through(out: &mut String, count: usize, namespaces: usize, rng: &mut Rng) {
    let namespaces = namespaces.max(1);
    for i in 0..count {
        let ns = ns_name(i % namespaces);
        let path = format!("{ns}/apps/app-{i:06}.yaml");
        match i % 20 {
            0..=11 => deployment(out, &ns, i, &path, rng),
            12..=16 => config_map(out, &ns, i, &path, rng),
            17 | 18 => helm_release(out, &ns, i, &path, rng),
            _ => crd(out, i, &path),
        }
    }
}

fn header(
    out: &mut String,
    api_version: &str,
    kind: &str,
    name: &str,
    ns: Option<&str>,
    path: &str,
) {
    let _ = write!(
        out,
        "- apiVersion: {api_version}\n  kind: {kind}\n  metadata:\n    name: {name}\n"
    );
    if let Some(ns) = ns {
        let _ = writeln!(out, "    namespace: {ns}");
    }
    let _ = write!(
        out,
        "    labels:\n      app.kubernetes.io/name: {name}\n      app.kubernetes.io/part-of: platform\n    annotations:\n"
    );
    kpt_annotations(out, "      ", path, 0);
}

fn deployment(out: &mut String, ns: &str, i: usize, path: &str, rng: &mut Rng) {
    let name = format!("app-{i:06}");
    header(out, "apps/v1", "Deployment", &name, Some(ns), path);
    let replicas = 1 + rng.below(5);
    let _ = write!(
        out,
        "  spec:\n    replicas: {replicas}\n    revisionHistoryLimit: 5\n    selector:\n      matchLabels:\n        app.kubernetes.io/name: {name}\n    strategy:\n      type: RollingUpdate\n      rollingUpdate: {{maxSurge: 25%, maxUnavailable: 0}}\n    template:\n      metadata:\n        labels:\n          app.kubernetes.io/name: {name}\n        annotations:\n          checksum/config: {:016x}{:016x}\n      spec:\n        serviceAccountName: {name}\n        securityContext:\n          runAsNonRoot: true\n          seccompProfile: {{type: RuntimeDefault}}\n        containers:\n",
        rng.next(),
        rng.next()
    );
    for c in 0..(1 + rng.below(2)) {
        let _ = write!(
            out,
            "        - name: c{c}\n          image: registry.example.net/platform/{name}:1.{}.{}\n          imagePullPolicy: IfNotPresent\n          args: [\"--port=8080\", \"--log-level=info\", \"--metrics-addr=:9090\"]\n          env:\n",
            rng.below(30),
            rng.below(10)
        );
        for e in 0..(3 + rng.below(6)) {
            let _ = write!(
                out,
                "          - name: SETTING_{e}\n            value: \"value-{:08x}\"\n",
                rng.next() as u32
            );
        }
        let _ = write!(
            out,
            "          - name: POD_NAME\n            valueFrom:\n              fieldRef: {{fieldPath: metadata.name}}\n          ports:\n          - {{name: http, containerPort: 8080, protocol: TCP}}\n          - {{name: metrics, containerPort: 9090, protocol: TCP}}\n          readinessProbe:\n            httpGet: {{path: /readyz, port: http}}\n            periodSeconds: 10\n          livenessProbe:\n            httpGet: {{path: /healthz, port: http}}\n            initialDelaySeconds: 15\n          resources:\n            requests: {{cpu: 100m, memory: 128Mi}}\n            limits: {{cpu: '1', memory: 512Mi}}\n          securityContext:\n            allowPrivilegeEscalation: false\n            readOnlyRootFilesystem: true\n            capabilities: {{drop: [ALL]}}\n          volumeMounts:\n          - {{name: config, mountPath: /etc/app}}\n          - {{name: tmp, mountPath: /tmp}}\n"
        );
    }
    let _ = write!(
        out,
        "        volumes:\n        - name: config\n          configMap: {{name: config-{i:06}, defaultMode: 420}}\n        - name: tmp\n          emptyDir: {{}}\n"
    );
}

fn config_map(out: &mut String, ns: &str, i: usize, path: &str, rng: &mut Rng) {
    let name = format!("config-{i:06}");
    header(out, "v1", "ConfigMap", &name, Some(ns), path);
    out.push_str("  data:\n    app.yaml: |\n");
    for line in 0..(10 + rng.below(30)) {
        let _ = writeln!(
            out,
            "      key_{line}: \"{:016x}{:016x}\"  # setting {line}",
            rng.next(),
            rng.next()
        );
    }
    let _ = writeln!(out, "    LOG_LEVEL: info\n    FEATURE_FLAGS: a,b,c,d");
}

fn helm_release(out: &mut String, ns: &str, i: usize, path: &str, rng: &mut Rng) {
    let name = format!("release-{i:06}");
    header(
        out,
        "helm.toolkit.fluxcd.io/v2",
        "HelmRelease",
        &name,
        Some(ns),
        path,
    );
    let _ = write!(
        out,
        "  spec:\n    interval: 30m\n    chart:\n      spec:\n        chart: podinfo\n        version: 6.{}.0\n        sourceRef: {{kind: HelmRepository, name: podinfo, namespace: flux-system}}\n    install: {{remediation: {{retries: 3}}}}\n    values:\n      replicaCount: {}\n      ingress:\n        enabled: true\n        hosts:\n        - host: {name}.apps.example.net\n          paths: [{{path: /, pathType: Prefix}}]\n      resources:\n        requests: {{cpu: 50m, memory: 64Mi}}\n      extraEnvs:\n",
        rng.below(10),
        1 + rng.below(3)
    );
    for e in 0..(10 + rng.below(10)) {
        let _ = write!(
            out,
            "      - name: EXTRA_{e}\n        value: \"{:08x}\"\n",
            rng.next() as u32
        );
    }
}

fn crd(out: &mut String, i: usize, path: &str) {
    let plural = format!("widgets{i:06}");
    let name = format!("{plural}.example.net");
    header(
        out,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &name,
        None,
        path,
    );
    let _ = write!(
        out,
        "  spec:\n    group: example.net\n    names: {{kind: Widget{i:06}, listKind: Widget{i:06}List, plural: {plural}, singular: widget{i:06}}}\n    scope: Namespaced\n    versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          type: object\n          properties:\n            spec:\n              type: object\n              properties:\n"
    );
    for p in 0..20 {
        let _ = write!(
            out,
            "                field{p}:\n                  type: string\n                  description: Field {p} of the widget; free text an operator sets.\n"
        );
    }
    out.push_str("            status:\n              type: object\n              x-kubernetes-preserve-unknown-fields: true\n");
}
