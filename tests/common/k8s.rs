//! Checks of emitted core Kubernetes objects: k8s-openapi round trips (unknown fields rejected)
//! and the Pod Security "restricted" profile.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_yaml::Value;

/// Decodes `obj` as the k8s-openapi type `T` and encodes it back: any field the type does not
/// know is lost on the way, so a difference means an unknown (misspelled, misplaced) field.
pub fn roundtrip<T: DeserializeOwned + Serialize>(obj: &Value) -> Result<T, String> {
    let typed: T = serde_path_to_error::deserialize(obj.clone())
        .map_err(|e| format!("{}: {}", e.path(), e.inner()))?;
    let back: Value = serde_yaml::to_value(&typed).map_err(|e| e.to_string())?;
    let json_in: serde_json::Value =
        serde_yaml::from_value(obj.clone()).map_err(|e| e.to_string())?;
    let json_back: serde_json::Value = serde_yaml::from_value(back).map_err(|e| e.to_string())?;
    if normalize(json_in.clone()) != normalize(json_back.clone()) {
        return Err(format!(
            "fields lost in a k8s-openapi round trip (unknown fields?)\n in: {json_in}\nout: {json_back}"
        ));
    }
    Ok(typed)
}

/// Drops empty maps/lists that k8s-openapi may add or remove without meaning.
fn normalize(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        J::Object(m) => J::Object(
            m.into_iter()
                .map(|(k, v)| (k, normalize(v)))
                .filter(|(_, v)| {
                    !matches!(v, J::Object(o) if o.is_empty())
                        && !matches!(v, J::Array(a) if a.is_empty())
                        && !v.is_null()
                })
                .collect(),
        ),
        J::Array(a) => J::Array(a.into_iter().map(normalize).collect()),
        other => other,
    }
}

/// Checks a pod spec against Pod Security "restricted" (pod-security-admission policy/ checks):
/// returns every violation, naming the container.
pub fn restricted_violations(pod: &k8s_openapi::api::core::v1::PodSpec) -> Vec<String> {
    let mut v = Vec::new();
    let psc = pod.security_context.clone().unwrap_or_default();
    if pod.host_network == Some(true) || pod.host_pid == Some(true) || pod.host_ipc == Some(true) {
        v.push("host namespaces".into());
    }
    for vol in pod.volumes.iter().flatten() {
        let allowed = vol.config_map.is_some()
            || vol.downward_api.is_some()
            || vol.empty_dir.is_some()
            || vol.projected.is_some()
            || vol.secret.is_some()
            || vol.csi.is_some()
            || vol.persistent_volume_claim.is_some()
            || vol.ephemeral.is_some()
            || vol.image.is_some();
        if !allowed {
            v.push(format!("volume {} type not allowed", vol.name));
        }
    }
    let pod_seccomp = psc.seccomp_profile.as_ref().map(|s| s.type_.as_str());
    let all = pod
        .init_containers
        .iter()
        .flatten()
        .chain(pod.containers.iter());
    for c in all {
        let sc = c.security_context.clone().unwrap_or_default();
        let name = &c.name;
        let non_root = sc.run_as_non_root.or(psc.run_as_non_root);
        if non_root != Some(true) {
            v.push(format!("{name}: runAsNonRoot is not true"));
        }
        let uid = sc.run_as_user.or(psc.run_as_user);
        match uid {
            Some(0) => v.push(format!("{name}: runAsUser 0")),
            None => v.push(format!(
                "{name}: no explicit runAsUser (image may default to root)"
            )),
            _ => {}
        }
        if sc.allow_privilege_escalation != Some(false) {
            v.push(format!("{name}: allowPrivilegeEscalation is not false"));
        }
        if sc.privileged == Some(true) {
            v.push(format!("{name}: privileged"));
        }
        let caps = sc.capabilities.clone().unwrap_or_default();
        if !caps.drop.iter().flatten().any(|d| d == "ALL") {
            v.push(format!("{name}: capabilities.drop lacks ALL"));
        }
        if caps.add.iter().flatten().any(|a| a != "NET_BIND_SERVICE") {
            v.push(format!("{name}: adds capabilities"));
        }
        let seccomp = sc
            .seccomp_profile
            .as_ref()
            .map(|s| s.type_.as_str())
            .or(pod_seccomp);
        if !matches!(seccomp, Some("RuntimeDefault" | "Localhost")) {
            v.push(format!(
                "{name}: seccompProfile is not RuntimeDefault/Localhost"
            ));
        }
        for p in c.ports.iter().flatten() {
            if p.host_port.is_some_and(|h| h != 0) {
                v.push(format!("{name}: hostPort"));
            }
        }
    }
    v
}
