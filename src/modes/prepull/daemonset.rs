//! The pre-pull DaemonSet: one init container per image running a no-op (running it is what
//! makes kubelet pull it, so pod Ready means every image is on the node), one `pause` container.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    DaemonSet, DaemonSetSpec, DaemonSetUpdateStrategy, RollingUpdateDaemonSet,
};
use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, LocalObjectReference, PodSpec, PodTemplateSpec,
    Toleration as CoreToleration, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::config::MetalLBImagePrepullSpec;
use super::images::PrepullImage;
use super::inputs::UNIT;
use super::pod::{
    NAME_LABEL, labels, meta, quantity, resources, restricted_container, restricted_pod,
};

/// A DNS-1123 label for an init container: `pull-<n>-<image short name>`.
fn container_name(index: usize, image: &PrepullImage) -> String {
    let mut name = format!("pull-{index}-");
    for c in image.image.short_name().chars() {
        name.push(if c.is_ascii_alphanumeric() { c } else { '-' });
    }
    name.truncate(63);
    name.trim_end_matches('-').to_owned()
}

/// Where the static no-op binary is mounted when `noopImage` is set.
const NOOP_DIR: &str = "/noop";

/// The DaemonSet `metallb-image-prepull`.
pub fn daemonset(spec: &MetalLBImagePrepullSpec, images: &[PrepullImage]) -> DaemonSet {
    let uid = spec.run_as_user;
    let init_containers = init_containers(spec, images);
    let volumes = spec.noop_image.as_ref().map(|_| {
        vec![Volume {
            name: "noop".into(),
            empty_dir: Some(EmptyDirVolumeSource {
                size_limit: Some(quantity("16Mi")),
                ..Default::default()
            }),
            ..Default::default()
        }]
    });
    let tolerations = tolerations(spec);
    let selector = BTreeMap::from([(NAME_LABEL.to_string(), UNIT.to_string())]);
    DaemonSet {
        metadata: meta(UNIT, &spec.namespace, "image-prepull"),
        spec: Some(DaemonSetSpec {
            selector: LabelSelector {
                match_labels: Some(selector),
                ..Default::default()
            },
            // Pause pods serve nobody: replace them all at once when the image list changes.
            update_strategy: Some(DaemonSetUpdateStrategy {
                type_: Some("RollingUpdate".into()),
                rolling_update: Some(RollingUpdateDaemonSet {
                    max_unavailable: Some(IntOrString::String("100%".into())),
                    ..Default::default()
                }),
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels("image-prepull")),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    automount_service_account_token: Some(false),
                    enable_service_links: Some(false),
                    image_pull_secrets: pull_secrets(spec),
                    init_containers: Some(init_containers),
                    containers: vec![Container {
                        name: "pause".into(),
                        image: Some(spec.pause_image.to_string()),
                        image_pull_policy: Some("IfNotPresent".into()),
                        resources: Some(resources(("1m", "8Mi"), ("10m", "16Mi"))),
                        security_context: Some(restricted_container(uid)),
                        ..Default::default()
                    }],
                    node_selector: Some(BTreeMap::from([(
                        "kubernetes.io/os".to_string(),
                        "linux".to_string(),
                    )])),
                    priority_class_name: spec.priority_class_name.clone(),
                    security_context: Some(restricted_pod(uid)),
                    termination_grace_period_seconds: Some(0),
                    tolerations: Some(tolerations),
                    volumes,
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The init containers: one per image, each running a no-op so the kubelet pulls the image
/// (after the static no-op is installed, when `noopImage` is set).
fn init_containers(spec: &MetalLBImagePrepullSpec, images: &[PrepullImage]) -> Vec<Container> {
    let uid = spec.run_as_user;
    // Without a shell in the images: copy a static busybox into an emptyDir first and run it
    // as `true` (busybox picks the applet from argv[0]) in every pre-pull container.
    let noop_mount = || VolumeMount {
        name: "noop".into(),
        mount_path: NOOP_DIR.into(),
        ..Default::default()
    };
    let (command, mounts) = match &spec.noop_image {
        Some(_) => (
            vec![format!("{NOOP_DIR}/true")],
            Some(vec![VolumeMount {
                read_only: Some(true),
                ..noop_mount()
            }]),
        ),
        None => (spec.noop_command.clone(), None),
    };
    let mut init_containers: Vec<Container> = Vec::with_capacity(images.len() + 1);
    if let Some(noop_image) = &spec.noop_image {
        init_containers.push(Container {
            name: "install-noop".into(),
            image: Some(noop_image.to_string()),
            image_pull_policy: Some("IfNotPresent".into()),
            command: Some(vec![
                "/bin/cp".into(),
                "/bin/busybox".into(),
                format!("{NOOP_DIR}/true"),
            ]),
            resources: Some(resources(("1m", "8Mi"), ("50m", "32Mi"))),
            security_context: Some(restricted_container(uid)),
            volume_mounts: Some(vec![noop_mount()]),
            ..Default::default()
        });
    }
    init_containers.extend(images.iter().enumerate().map(|(i, image)| Container {
        name: container_name(i, image),
        image: Some(image.image.to_string()),
        image_pull_policy: Some("IfNotPresent".into()),
        command: Some(command.clone()),
        resources: Some(resources(("1m", "8Mi"), ("50m", "32Mi"))),
        security_context: Some(restricted_container(uid)),
        volume_mounts: mounts.clone(),
        ..Default::default()
    }));
    init_containers
}

/// The pods' tolerations: the configured ones, or every taint.
fn tolerations(spec: &MetalLBImagePrepullSpec) -> Vec<CoreToleration> {
    match &spec.tolerations {
        Some(list) => list
            .iter()
            .map(|t| CoreToleration {
                key: t.key.clone(),
                operator: t.operator.clone(),
                value: t.value.clone(),
                effect: t.effect.clone(),
                toleration_seconds: t.toleration_seconds,
            })
            .collect(),
        // frr-k8s runs on every Linux node including control planes: tolerate every taint.
        None => vec![CoreToleration {
            operator: Some("Exists".into()),
            ..Default::default()
        }],
    }
}

/// `imagePullSecrets` of the generated pods, `None` when there are none.
pub fn pull_secrets(spec: &MetalLBImagePrepullSpec) -> Option<Vec<LocalObjectReference>> {
    (!spec.image_pull_secrets.is_empty()).then(|| {
        spec.image_pull_secrets
            .iter()
            .map(|n| LocalObjectReference { name: n.clone() })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::prepull::ImageRef;

    #[test]
    fn container_names_are_dns_labels() {
        let image = PrepullImage {
            image: ImageRef::parse("quay.io/metallb/frr-k8s:v0.0.25").unwrap(),
            source: String::new(),
        };
        assert_eq!(container_name(0, &image), "pull-0-frr-k8s");
    }

    #[test]
    fn a_noop_image_replaces_the_shell_no_op() {
        let image = PrepullImage {
            image: ImageRef::parse("registry.local/distroless-thing:v1").unwrap(),
            source: String::new(),
        };
        let spec = MetalLBImagePrepullSpec {
            noop_image: Some(ImageRef::parse("docker.io/library/busybox:1.36.1-musl").unwrap()),
            ..Default::default()
        };
        let pod = daemonset(&spec, &[image])
            .spec
            .unwrap()
            .template
            .spec
            .unwrap();
        let init = pod.init_containers.unwrap();
        assert_eq!(init[0].name, "install-noop");
        assert_eq!(
            init[1].command.as_deref(),
            Some(&["/noop/true".to_string()][..])
        );
        assert_eq!(
            init[1].volume_mounts.as_ref().unwrap()[0].read_only,
            Some(true)
        );
        assert!(pod.volumes.unwrap()[0].empty_dir.is_some());
    }
}
