//! A LoadBalancer Service as the mode keeps it: the few fields it reads, without an allocation
//! of its own.
//!
//! A platform has thousands of these; the item's tree is released while the items are parsed
//! (see [`super::inputs::Reader`]), and what stays must be small. The strings of all Services
//! live in one shared [`Store`] and the fields are spans into it: a dozen small strings per
//! Service were a dozen allocations, each with its allocator header, and, interleaved with the
//! parse's freed trees, they fragmented the heap enough to make `malloc` the top of a
//! 100k-Service profile.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Service;
use serde::Deserialize;
use serde_yaml::Value;

use super::selector::Labels;
use super::services::{METALLB_OLD_PREFIX, METALLB_PREFIX};
use crate::krm::object::{SharedFile, SharedPaths};
use crate::krm::{KrmObject, KrmResult, ResourceRef};

/// Annotation prefixes kept (the only annotations the mode reads or patches).
const KEPT_ANNOTATIONS: &[&str] = &[
    METALLB_PREFIX,
    METALLB_OLD_PREFIX,
    "lbipam.cilium.io/",
    "io.cilium/",
];

/// A string in [`Store::text`]: start and end byte.
#[derive(Debug, Clone, Copy)]
struct Span(u32, u32);

/// A run of entries in one of the [`Store`] lists: start and end index.
#[derive(Debug, Clone, Copy, Default)]
struct Run(u32, u32);

impl Run {
    fn of<T>(self, list: &[T]) -> &[T] {
        &list[self.0 as usize..self.1 as usize]
    }
}

/// The strings and lists of every [`LbService`] of a run.
#[derive(Debug, Default)]
pub struct Store {
    text: String,
    /// Labels and selectors, each sorted by key.
    pairs: Vec<(Span, Span)>,
    /// Kept annotations in item order; `None` values were not strings.
    annotations: Vec<(Span, Option<Span>)>,
    /// Ingress IPs.
    ips: Vec<Span>,
    /// Service ports (number and protocol) of the Services that ask to share an IP.
    ports: Vec<(i32, Protocol)>,
}

/// A Service port's protocol (`TCP` when the item leaves it out, as the API server defaults it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Protocol {
    /// `TCP`.
    Tcp,
    /// `UDP`.
    Udp,
    /// `SCTP`.
    Sctp,
}

impl Protocol {
    fn parse(text: Option<&str>) -> Protocol {
        match text {
            Some("UDP") => Protocol::Udp,
            Some("SCTP") => Protocol::Sctp,
            _ => Protocol::Tcp,
        }
    }
    /// As Kubernetes spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
            Protocol::Sctp => "SCTP",
        }
    }
}

impl Store {
    fn add(&mut self, s: &str) -> Span {
        let start = self.text.len();
        self.text.push_str(s);
        // The store holds the strings of one input, far below 4 GiB.
        Span(start as u32, self.text.len() as u32)
    }
    fn pairs<'a>(&mut self, map: impl IntoIterator<Item = (&'a String, &'a String)>) -> Run {
        let start = self.pairs.len() as u32;
        for (k, v) in map {
            let pair = (self.add(k), self.add(v));
            self.pairs.push(pair);
        }
        Run(start, self.pairs.len() as u32)
    }
    fn s(&self, span: Span) -> &str {
        &self.text[span.0 as usize..span.1 as usize]
    }
    /// Gives back what growing by doubling left unused.
    pub fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.pairs.shrink_to_fit();
        self.annotations.shrink_to_fit();
        self.ips.shrink_to_fit();
        self.ports.shrink_to_fit();
    }
}

/// A Service of type LoadBalancer: what the mode reads from it.
#[derive(Debug, Clone)]
pub struct LbService {
    /// Item index.
    pub index: usize,
    /// Where the strings and lists below are (shared by all Services of the run; set when the
    /// reading is done, see [`LbService::attach`]).
    store: Arc<Store>,
    /// `apiVersion` when it is not `v1` (kept as written for the results).
    api_version: Option<Span>,
    /// `metadata.name`.
    name: Span,
    /// `metadata.namespace`.
    namespace: Option<Span>,
    /// `spec.loadBalancerClass`.
    class: Option<Span>,
    /// `spec.loadBalancerIP`, when not empty.
    lb_ip: Option<Span>,
    /// `spec.externalTrafficPolicy == Local`.
    etp_local: bool,
    /// The item has a `status` (an object exported from the cluster): its ingress IPs are
    /// what the cluster holds, even when there are none.
    has_status: bool,
    /// `metadata.annotations` is there but not a mapping (`annotations: ~`).
    annotations_not_mapping: bool,
    /// kpt's file (path and index annotations), the path shared between Services.
    file: Option<SharedFile>,
    /// `metadata.labels`, sorted by key (in [`Store::pairs`]).
    labels: Run,
    /// The kept annotations, in item order (in [`Store::annotations`]).
    annotations: Run,
    /// `spec.selector`, sorted by key (in [`Store::pairs`]), kept only for
    /// `externalTrafficPolicy: Local` Services (the only ones whose selector the mode compares).
    selector: Option<Run>,
    /// IPs in `status.loadBalancer.ingress` (in [`Store::ips`]).
    ingress: Run,
    /// `spec.ports` (in [`Store::ports`]), kept only for Services with a MetalLB
    /// `allow-shared-ip` annotation (the only ones whose ports the sharing rules compare).
    ports: Run,
}

impl LbService {
    /// Reads a Service item (type LoadBalancer) into `a`. The k8s-openapi decode validates the
    /// whole Service; only the fields the mode uses are kept. `paths` shares file paths. The
    /// Service must be [`attach`](LbService::attach)ed to the finished store before use.
    pub(super) fn read(
        index: usize,
        item: &Value,
        paths: &mut SharedPaths,
        a: &mut Store,
        detached: &Arc<Store>,
    ) -> Result<LbService, serde_yaml::Error> {
        let svc = Service::deserialize(item)?;
        let has_status = item.get("status").is_some_and(|s| !s.is_null());
        let api_version = Some(item.api_version())
            .filter(|v| *v != "v1")
            .map(|v| a.add(v));
        let name = a.add(svc.metadata.name.as_deref().unwrap_or(""));
        let namespace = svc.metadata.namespace.as_deref().map(|n| a.add(n));
        let spec = svc.spec.unwrap_or_default();
        let etp_local = spec.external_traffic_policy.as_deref() == Some("Local");
        let class = spec.load_balancer_class.as_deref().map(|c| a.add(c));
        let lb_ip = spec
            .load_balancer_ip
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(|ip| a.add(ip));
        let labels = a.pairs(svc.metadata.labels.iter().flatten());
        let ann = item.get("metadata").and_then(|m| m.get("annotations"));
        let start = a.annotations.len() as u32;
        for (k, v) in ann.and_then(Value::as_mapping).into_iter().flatten() {
            if let Some(k) = k.as_str()
                && KEPT_ANNOTATIONS.iter().any(|p| k.starts_with(p))
            {
                let entry = (a.add(k), v.as_str().map(|v| a.add(v)));
                a.annotations.push(entry);
            }
        }
        let annotations = Run(start, a.annotations.len() as u32);
        let shares = a.annotations[start as usize..]
            .iter()
            .any(|(k, _)| a.s(*k).ends_with("/allow-shared-ip"));
        let start = a.ports.len() as u32;
        if shares {
            for port in spec.ports.iter().flatten() {
                a.ports
                    .push((port.port, Protocol::parse(port.protocol.as_deref())));
            }
        }
        let ports = Run(start, a.ports.len() as u32);
        let selector = spec
            .selector
            .as_ref()
            .filter(|_| etp_local)
            .map(|s| a.pairs(s));
        let start = a.ips.len() as u32;
        let ips = svc
            .status
            .and_then(|s| s.load_balancer)
            .and_then(|lb| lb.ingress)
            .into_iter()
            .flatten()
            .filter_map(|i| i.ip);
        for ip in ips {
            let span = a.add(&ip);
            a.ips.push(span);
        }
        let ingress = Run(start, a.ips.len() as u32);
        let file = paths.file_of(item);
        Ok(LbService {
            index,
            store: Arc::clone(detached),
            api_version,
            name,
            namespace,
            class,
            lb_ip,
            etp_local,
            has_status,
            annotations_not_mapping: ann.is_some_and(|a| !a.is_mapping()),
            file,
            labels,
            annotations,
            selector,
            ingress,
            ports,
        })
    }

    /// Points the Service at the finished store it was read into.
    pub(super) fn attach(&mut self, store: &Arc<Store>) {
        self.store = Arc::clone(store);
    }

    fn s(&self, span: Span) -> &str {
        self.store.s(span)
    }

    /// `{metadata: {labels, annotations}}` with the labels and the kept annotations, the shape
    /// the Service patch and its report are computed on (see `services::patch`).
    pub fn meta(&self) -> Value {
        let mut meta = serde_yaml::Mapping::new();
        let labels = self.labels.of(&self.store.pairs);
        if !labels.is_empty() {
            let labels = labels
                .iter()
                .map(|(k, v)| (Value::from(self.s(*k)), Value::from(self.s(*v))))
                .collect();
            meta.insert("labels".into(), Value::Mapping(labels));
        }
        if self.annotations_not_mapping {
            meta.insert("annotations".into(), Value::Null);
        } else if self.annotations.1 > self.annotations.0 {
            let ann = self
                .annotations
                .of(&self.store.annotations)
                .iter()
                .map(|(k, v)| {
                    let v = v.map_or(Value::Null, |v| Value::from(self.s(v)));
                    (Value::from(self.s(*k)), v)
                })
                .collect();
            meta.insert("annotations".into(), Value::Mapping(ann));
        }
        let mut root = serde_yaml::Mapping::new();
        root.insert("metadata".into(), Value::Mapping(meta));
        Value::Mapping(root)
    }
    /// `metadata.namespace`, or `default`.
    pub fn namespace(&self) -> &str {
        self.namespace.map_or("default", |n| self.s(n))
    }
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.s(self.name)
    }
    /// `metadata.labels`.
    pub fn labels(&self) -> Labels {
        self.labels
            .of(&self.store.pairs)
            .iter()
            .map(|(k, v)| (self.s(*k).to_owned(), self.s(*v).to_owned()))
            .collect()
    }
    /// One label.
    pub fn label(&self, key: &str) -> Option<&str> {
        let labels = self.labels.of(&self.store.pairs);
        labels
            .binary_search_by(|(k, _)| self.s(*k).cmp(key))
            .ok()
            .map(|i| self.s(labels[i].1))
    }
    /// A kept annotation (MetalLB or Cilium LB-IPAM key) with a string value.
    pub fn kept_annotation(&self, key: &str) -> Option<&str> {
        let annotations = self.annotations.of(&self.store.annotations);
        annotations
            .iter()
            .find(|(k, _)| self.s(*k) == key)
            .and_then(|(_, v)| v.map(|v| self.s(v)))
    }
    /// The kept annotation keys, in item order.
    pub fn kept_annotation_keys(&self) -> impl Iterator<Item = &str> {
        self.annotations
            .of(&self.store.annotations)
            .iter()
            .map(|(k, _)| self.s(*k))
    }
    /// `metadata.annotations` is there but not a mapping (`annotations: ~`).
    pub fn annotations_not_mapping(&self) -> bool {
        self.annotations_not_mapping
    }
    /// A MetalLB annotation by suffix (`address-pool`): the current key first, then the
    /// deprecated one, as MetalLB reads them.
    pub fn metallb_annotation(&self, suffix: &str) -> Option<&str> {
        [METALLB_PREFIX, METALLB_OLD_PREFIX]
            .iter()
            .find_map(|prefix| {
                let annotations = self.annotations.of(&self.store.annotations);
                annotations.iter().find_map(|(k, v)| {
                    (self.s(*k).strip_prefix(prefix) == Some(suffix))
                        .then_some(*v)
                        .flatten()
                        .map(|v| self.s(v))
                })
            })
    }
    /// `spec.loadBalancerClass`.
    pub fn class(&self) -> Option<&str> {
        self.class.map(|c| self.s(c))
    }
    /// `spec.externalTrafficPolicy == Local`.
    pub fn etp_local(&self) -> bool {
        self.etp_local
    }
    /// `spec.selector` (sorted by key) of an `externalTrafficPolicy: Local` Service, for
    /// sharing compatibility (`None` for other Services).
    pub fn selector(&self) -> Option<Vec<(&str, &str)>> {
        self.selector.map(|sel| {
            sel.of(&self.store.pairs)
                .iter()
                .map(|(k, v)| (self.s(*k), self.s(*v)))
                .collect()
        })
    }
    /// `spec.ports` as (port, protocol), for Services with a MetalLB `allow-shared-ip`
    /// annotation (empty for the others).
    pub fn ports(&self) -> &[(i32, Protocol)] {
        self.ports.of(&self.store.ports)
    }
    /// IPs in `status.loadBalancer.ingress`.
    pub fn ingress_ips(&self) -> Vec<String> {
        self.ingress
            .of(&self.store.ips)
            .iter()
            .map(|ip| self.s(*ip).to_owned())
            .collect()
    }
    /// The item carries a `status` (exported from the cluster).
    pub fn has_status(&self) -> bool {
        self.has_status
    }
    /// `spec.loadBalancerIP` (deprecated field both controllers honour).
    pub fn spec_lb_ip(&self) -> Option<&str> {
        self.lb_ip.map(|ip| self.s(ip))
    }
}

/// Names a Service read into an [`LbService`] in a result, as [`KrmResult::about`] names an item.
pub trait AboutService {
    /// Sets the result's resource and file to the Service's.
    fn about_svc(self, svc: &LbService) -> Self;
}

impl AboutService for KrmResult {
    fn about_svc(self, svc: &LbService) -> Self {
        let file = svc.file.as_ref().map(SharedFile::file_ref);
        self.about_item(
            ResourceRef {
                api_version: svc.api_version.map_or("v1", |v| svc.s(v)).to_owned(),
                kind: "Service".into(),
                name: svc.name().to_owned(),
                namespace: svc.namespace.map(|n| svc.s(n).to_owned()),
            },
            file,
        )
    }
}
