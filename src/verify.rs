//! `cutover verify GATE --plan FILE`: checks, on the live cluster's objects, what each phase of
//! the MetalLB → Cilium L2 cutover must have reached before the next one is applied.
//!
//! I/O-free like [`crate::function::process`]: [`run`] takes the arguments, the plan's text and
//! the text of one `kubectl get … -o yaml` (a `List`), and returns the lines to print and the
//! exit code. The binary only reads the plan file and stdin.
//!
//! The plan is the `ObservedState` item `cutover observe` wrote before `prepare` (the one the
//! function reads): its `services` (`<namespace>/<name>: <ip>[,<ip>]`) are the IPs that must
//! survive every phase, its `nodes` the nodes MetalLB's speaker never announced from. A
//! hand-written plan needs only `services`.
//!
//! Each gate is a list of named checks; each check returns its findings (one per object that
//! fails it). Exit 0 without findings, 1 with findings or unreadable input, 2 on bad arguments.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde::Deserialize;
use serde_yaml::Value;

use crate::modes::announcer::model::{self, l2announcer, state::Cluster, state::SvcKey};
use crate::modes::announcer::observed::{self, EXCLUDE_LB_LABEL, Observed};

/// The Service condition LB-IPAM writes (cilium/cilium `operator/pkg/lbipam/lbipam.go`,
/// `ciliumSvcRequestSatisfiedCondition`), and its name before Cilium 1.15.
const IPAM_SATISFIED: [&str; 2] = [
    "cilium.io/IPAMRequestSatisfied",
    "io.cilium/lb-ipam-request-satisfied",
];
/// The pool condition LB-IPAM writes on overlapping pools (`ciliumPoolConflict`), and its name
/// before Cilium 1.15.
const POOL_CONFLICT: [&str; 2] = ["cilium.io/PoolConflict", "io.cilium/conflict"];
/// Prefix of the per-Service Lease Cilium's L2 announcer elects the announcing node with
/// (`pkg/l2announcer/l2announcer.go`: `cilium-l2announce-<namespace>-<name>`).
const LEASE_PREFIX: &str = "cilium-l2announce-";
/// The `loadBalancerClass`es LB-IPAM serves besides none.
const CILIUM_CLASSES: [&str; 2] = ["io.cilium/l2-announcer", "io.cilium/bgp-control-plane"];
/// The class Cilium's L2 announcer serves besides none.
const L2_CLASS: &str = "io.cilium/l2-announcer";

/// `cutover verify --help`.
pub const USAGE: &str = "\
cutover verify — check a phase of the MetalLB → Cilium L2 cutover on the live cluster

USAGE:
    kubectl get services,nodes,pods,leases.coordination.k8s.io,\\
      ciliumloadbalancerippools.cilium.io,ciliuml2announcementpolicies.cilium.io,\\
      ipaddresspools.metallb.io,l2advertisements.metallb.io -A -o yaml \\
      | cutover verify GATE --plan FILE [--cilium-namespace NS] [--now RFC3339]

GATE:
    prepare        IPs kept; LB-IPAM took every Service (cilium.io/IPAMRequestSatisfied True);
                   no pool Conflicting; no CiliumL2AnnouncementPolicy, no held L2 Lease
    stop-speaker   IPs kept; no MetalLB speaker or controller pod Running or Pending
    cutover        IPs kept; each Service's Lease cilium-l2announce-<ns>-<name> held, unexpired,
                   by a node without node.kubernetes.io/exclude-from-external-load-balancers;
                   no MetalLB IPAddressPool or L2Advertisement left

OPTIONS:
    --plan FILE              the ObservedState item `cutover observe` wrote before prepare
                             (at least `services: {<ns>/<name>: <ip>[,<ip>]}`)
    --cilium-namespace NS    where Cilium's Leases live (default kube-system)
    --now RFC3339            the time Leases are judged at (default: now)

One line per finding on stdout (`cutover verify: GATE: ...`), then a summary line.
Exit code: 0 passed, 1 findings or unreadable input, 2 bad arguments.
";

/// A gate: what must hold after a phase is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// After `prepare`: LB-IPAM holds the IPs, MetalLB alone announces.
    Prepare,
    /// After `stop-speaker`: MetalLB no longer runs.
    StopSpeaker,
    /// After `cutover`: Cilium announces every Service from an allowed node.
    Cutover,
}

impl Gate {
    /// The gate named as on the command line.
    pub fn from_name(name: &str) -> Option<Gate> {
        match name {
            "prepare" => Some(Gate::Prepare),
            "stop-speaker" => Some(Gate::StopSpeaker),
            "cutover" => Some(Gate::Cutover),
            _ => None,
        }
    }

    /// The name on the command line and in every line printed.
    pub fn name(self) -> &'static str {
        match self {
            Gate::Prepare => "prepare",
            Gate::StopSpeaker => "stop-speaker",
            Gate::Cutover => "cutover",
        }
    }
}

/// The parsed command line.
#[derive(Debug, Clone)]
pub struct Args {
    /// The gate to check.
    pub gate: Gate,
    /// Path of the plan file.
    pub plan: String,
    /// Namespace of Cilium's Leases.
    pub cilium_namespace: String,
    /// The time Leases are judged at; `None`: the current time.
    pub now: Option<Timestamp>,
}

impl Args {
    /// Parses the arguments after `verify`; the error is a usage message (exit 2).
    pub fn parse(args: &[&str]) -> Result<Args, String> {
        let mut gate = None;
        let (mut plan, mut ns, mut now) = (None, None, None);
        let mut rest = args.iter();
        while let Some(&arg) = rest.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v)),
                _ => (arg, None),
            };
            let mut value = |slot: &mut Option<String>| -> Result<(), String> {
                let v = match inline {
                    Some(v) => v,
                    None => rest.next().ok_or(format!("{flag} needs a value"))?,
                };
                if slot.replace(v.to_owned()).is_some() {
                    return Err(format!("{flag} given twice"));
                }
                Ok(())
            };
            match flag {
                "--plan" => value(&mut plan)?,
                "--cilium-namespace" => value(&mut ns)?,
                "--now" => value(&mut now)?,
                f if f.starts_with('-') => return Err(format!("unknown option {f:?}")),
                name if gate.is_none() => {
                    gate = Some(Gate::from_name(name).ok_or(format!(
                        "unknown gate {name:?}: expected prepare, stop-speaker or cutover"
                    ))?);
                }
                extra => return Err(format!("unexpected argument {extra:?}")),
            }
        }
        let gate = gate.ok_or("missing GATE (prepare, stop-speaker or cutover)")?;
        let plan = plan.ok_or("missing --plan FILE")?;
        let now = match now {
            Some(t) => Some(
                t.parse::<Timestamp>()
                    .map_err(|e| format!("--now {t:?} is no RFC 3339 time: {e}"))?,
            ),
            None => None,
        };
        let cilium_namespace = ns.unwrap_or_else(|| "kube-system".to_owned());
        if cilium_namespace.is_empty() {
            return Err("--cilium-namespace is empty".into());
        }
        Ok(Args {
            gate,
            plan,
            cilium_namespace,
            now,
        })
    }
}

/// What `run` prints and returns.
#[derive(Debug, Clone)]
pub struct Report {
    /// Findings, then the summary line (stdout); on unreadable input, the one error line.
    pub lines: Vec<String>,
    /// Messages for stderr (unreadable input).
    pub errors: Vec<String>,
    /// 0 passed, 1 findings or unreadable input.
    pub exit_code: u8,
}

/// The check a finding comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// A Service's IPs are those observed before `prepare`.
    IpsKept,
    /// LB-IPAM satisfied the Service's request.
    IpamSatisfied,
    /// No Cilium pool is Conflicting.
    NoPoolConflict,
    /// Nobody but MetalLB announces (no L2 policy, no held L2 Lease).
    NoForeignAnnouncer,
    /// No MetalLB speaker pod runs.
    SpeakerStopped,
    /// No MetalLB controller pod runs.
    ControllerStopped,
    /// The Service's L2 Lease is held, unexpired, by an allowed node.
    LeaseHeld,
    /// No MetalLB pool or advertisement is left.
    MetallbRemoved,
}

/// One object failing one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The check.
    pub check: Check,
    /// What is wrong, naming the object.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The plan: the IPs to keep and the nodes MetalLB excluded.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// `(namespace, name)` → observed IPs (empty: the Service had none; nothing to keep).
    pub services: BTreeMap<(String, String), BTreeSet<IpAddr>>,
    /// Nodes MetalLB's speaker never announced from.
    pub excluded_nodes: BTreeSet<String>,
}

impl Plan {
    /// Reads the plan file: an `ObservedState` item (or a mapping with its fields).
    pub fn parse(text: &str) -> Result<Plan, String> {
        let item = crate::krm::yaml::from_str(text).map_err(|e| format!("not YAML: {e}"))?;
        if !item.is_mapping() {
            return Err("expected an ObservedState item (a mapping)".into());
        }
        match item.get("kind").and_then(Value::as_str) {
            None | Some(observed::KIND) => {}
            Some(kind) => {
                return Err(format!(
                    "expected an ObservedState item (cutover observe), got kind {kind:?}"
                ));
            }
        }
        let mut results = Vec::new();
        let observed = Observed::read(0, &item, &mut results);
        if let Some(e) = results.first() {
            let field = e.field.as_ref().map(|f| f.path.as_str()).unwrap_or("");
            return Err(format!("{field}: {}", e.message));
        }
        let mut services = BTreeMap::new();
        for ((ns, name), ips) in &observed.services {
            let ips = ips
                .iter()
                .map(|ip| {
                    ip.parse::<IpAddr>()
                        .map_err(|_| format!("services.{ns}/{name}: {ip:?} is no IP address"))
                })
                .collect::<Result<BTreeSet<_>, _>>()?;
            services.insert((ns.clone(), name.clone()), ips);
        }
        let excluded_nodes = observed
            .excluded_nodes()
            .into_iter()
            .map(str::to_owned)
            .collect();
        Ok(Plan {
            services,
            excluded_nodes,
        })
    }
}

/// A `CiliumLoadBalancerIPPool` or `CiliumL2AnnouncementPolicy`: what the gates read of it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct CiliumObject {
    /// Name and labels.
    pub metadata: Meta,
    /// Conditions (pools).
    pub status: ConditionStatus,
}

/// A MetalLB `IPAddressPool` or `L2Advertisement`: its name is all the gates need.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct MetallbObject {
    /// Namespace and name.
    pub metadata: Meta,
}

/// The metadata the gates read of a custom resource.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Meta {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: Option<String>,
}

/// `status.conditions` of a custom resource.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ConditionStatus {
    /// The conditions.
    pub conditions: Vec<Condition>,
}

/// The live objects the gates read, typed.
#[derive(Debug, Default)]
pub struct Live {
    /// Services (all types).
    pub services: BTreeMap<(String, String), Service>,
    /// Nodes by name.
    pub nodes: BTreeMap<String, Node>,
    /// Pods.
    pub pods: Vec<Pod>,
    /// Leases by `(namespace, name)`.
    pub leases: BTreeMap<(String, String), Lease>,
    /// `CiliumLoadBalancerIPPool`s.
    pub pools: Vec<CiliumObject>,
    /// `CiliumL2AnnouncementPolicy`s.
    pub policies: Vec<CiliumObject>,
    /// MetalLB `IPAddressPool`s and `L2Advertisement`s as `(kind, object)`.
    pub metallb: Vec<(String, MetallbObject)>,
    /// The items as read, for the transition model's reader ([`model::snapshot`]).
    pub items: Vec<Value>,
}

impl Live {
    /// Reads kubectl's `List`; an item of a known kind that does not read is an error naming
    /// it. Items of other kinds are ignored.
    pub fn parse(text: &str) -> Result<Live, String> {
        let list = crate::krm::yaml::from_str(text).map_err(|e| format!("not YAML: {e}"))?;
        let items = match (list.get("kind").and_then(Value::as_str), list.get("items")) {
            (Some("List"), Some(Value::Sequence(items))) => items,
            (Some("List"), Some(Value::Null) | None) => return Ok(Live::default()),
            _ => {
                return Err(
                    "expected a List with items (the output of kubectl get … -o yaml)".into(),
                );
            }
        };
        let mut live = Live::default();
        for (i, item) in items.iter().enumerate() {
            let api_version = item.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
            let kind = item.get("kind").and_then(Value::as_str).unwrap_or("");
            let name = item
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("?");
            let context = |e: serde_yaml::Error| format!("items[{i}] ({kind} {name}): {e}");
            match (group, kind) {
                ("", "Service") => {
                    let svc: Service = typed(item).map_err(context)?;
                    live.services.insert(key(&svc.metadata), svc);
                }
                ("", "Node") => {
                    let node: Node = typed(item).map_err(context)?;
                    let name = node.metadata.name.clone().unwrap_or_default();
                    live.nodes.insert(name, node);
                }
                ("", "Pod") => live.pods.push(typed(item).map_err(context)?),
                ("coordination.k8s.io", "Lease") => {
                    let lease: Lease = typed(item).map_err(context)?;
                    live.leases.insert(key(&lease.metadata), lease);
                }
                ("cilium.io", "CiliumLoadBalancerIPPool") => {
                    live.pools.push(typed(item).map_err(context)?);
                }
                ("cilium.io", "CiliumL2AnnouncementPolicy") => {
                    live.policies.push(typed(item).map_err(context)?);
                }
                ("metallb.io", "IPAddressPool" | "L2Advertisement") => {
                    live.metallb
                        .push((kind.to_owned(), typed(item).map_err(context)?));
                }
                _ => {}
            }
        }
        live.items = items.clone();
        Ok(live)
    }
}

fn typed<T: serde::de::DeserializeOwned>(item: &Value) -> Result<T, serde_yaml::Error> {
    serde_yaml::from_value(item.clone())
}

fn key(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (String, String) {
    (
        meta.namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned()),
        meta.name.clone().unwrap_or_default(),
    )
}

/// Runs a gate on the plan's and stdin's text.
pub fn run(args: &Args, plan: &str, live: &str, now: Timestamp) -> Report {
    let gate = args.gate.name();
    let fail = |what: &str, e: String| Report {
        lines: Vec::new(),
        errors: vec![format!("cutover verify: {gate}: {what}: {e}")],
        exit_code: 1,
    };
    let plan = match Plan::parse(plan) {
        Ok(p) => p,
        Err(e) => return fail(&format!("cannot read the plan {}", args.plan), e),
    };
    let live = match Live::parse(live) {
        Ok(l) => l,
        Err(e) => return fail("cannot read stdin", e),
    };
    let ctx = Context {
        plan: &plan,
        live: &live,
        cilium_namespace: &args.cilium_namespace,
        now,
    };
    let findings = check(args.gate, &ctx);
    let mut lines: Vec<String> = findings
        .iter()
        .map(|f| format!("cutover verify: {gate}: {f}"))
        .collect();
    let kept = plan.services.values().filter(|ips| !ips.is_empty()).count();
    lines.push(if findings.is_empty() {
        format!("cutover verify: {gate}: passed ({kept} Services with observed IPs)")
    } else {
        format!(
            "cutover verify: {gate}: FAILED: {} finding(s) ({kept} Services with observed IPs)",
            findings.len()
        )
    });
    Report {
        lines,
        errors: Vec::new(),
        exit_code: u8::from(!findings.is_empty()),
    }
}

/// What the checks read.
pub struct Context<'a> {
    /// The plan.
    pub plan: &'a Plan,
    /// The live objects.
    pub live: &'a Live,
    /// Namespace of Cilium's Leases.
    pub cilium_namespace: &'a str,
    /// The time Leases are judged at.
    pub now: Timestamp,
}

/// The findings of a gate, check by check.
pub fn check(gate: Gate, ctx: &Context<'_>) -> Vec<Finding> {
    let checks: &[fn(&Context<'_>) -> Vec<Finding>] = match gate {
        Gate::Prepare => &[
            ips_kept,
            ipam_satisfied,
            no_pool_conflict,
            no_foreign_announcer,
        ],
        Gate::StopSpeaker => &[ips_kept, speaker_stopped, controller_stopped],
        Gate::Cutover => &[ips_kept, lease_held, metallb_removed],
    };
    checks.iter().flat_map(|c| c(ctx)).collect()
}

fn finding(check: Check, message: String) -> Finding {
    Finding { check, message }
}

/// The plan's Services that had IPs, with their live object (`None`: gone).
fn kept<'a>(
    ctx: &'a Context<'_>,
) -> impl Iterator<Item = (String, &'a BTreeSet<IpAddr>, Option<&'a Service>)> {
    ctx.plan
        .services
        .iter()
        .filter(|(_, ips)| !ips.is_empty())
        .map(|(k, ips)| (format!("{}/{}", k.0, k.1), ips, ctx.live.services.get(k)))
}

fn show(ips: &BTreeSet<IpAddr>) -> String {
    ips.iter()
        .map(IpAddr::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn class(svc: &Service) -> Option<&str> {
    svc.spec.as_ref()?.load_balancer_class.as_deref()
}

/// Every Service still has the IPs observed before `prepare` (as a set: order and spelling of
/// an address do not matter; a hostname ingress is ignored).
pub fn ips_kept(ctx: &Context<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (name, want, svc) in kept(ctx) {
        let Some(svc) = svc else {
            out.push(finding(
                Check::IpsKept,
                format!("Service {name} is gone (observed {})", show(want)),
            ));
            continue;
        };
        let ty = svc.spec.as_ref().and_then(|s| s.type_.as_deref());
        if ty != Some("LoadBalancer") {
            out.push(finding(
                Check::IpsKept,
                format!(
                    "Service {name} is no longer type LoadBalancer ({}; observed {})",
                    ty.unwrap_or("no type"),
                    show(want)
                ),
            ));
            continue;
        }
        let have: BTreeSet<IpAddr> = svc
            .status
            .iter()
            .flat_map(|s| s.load_balancer.iter())
            .flat_map(|lb| lb.ingress.iter().flatten())
            .filter_map(|i| i.ip.as_deref()?.parse().ok())
            .collect();
        if have.is_empty() {
            out.push(finding(
                Check::IpsKept,
                format!(
                    "Service {name} lost its IPs: observed {}, now none",
                    show(want)
                ),
            ));
        } else if &have != want {
            out.push(finding(
                Check::IpsKept,
                format!(
                    "Service {name} IPs changed: observed {}, now {}",
                    show(want),
                    show(&have)
                ),
            ));
        }
    }
    out
}

fn condition<'a>(conditions: &'a [Condition], types: &[&str]) -> Option<&'a Condition> {
    conditions
        .iter()
        .find(|c| types.contains(&c.type_.as_str()))
}

/// LB-IPAM took every Service it serves (no class, or a Cilium class): condition
/// `cilium.io/IPAMRequestSatisfied` True. False carries LB-IPAM's reason (`no_pool`,
/// `out_of_ips`, `already_allocated`, `pool_selector_mismatch`,
/// `already_allocated_incompatible_service`).
pub fn ipam_satisfied(ctx: &Context<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (name, _, svc) in kept(ctx) {
        let Some(svc) = svc else { continue };
        if class(svc).is_some_and(|c| !CILIUM_CLASSES.contains(&c)) {
            continue;
        }
        let conditions = svc
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        match condition(conditions, &IPAM_SATISFIED) {
            None => out.push(finding(
                Check::IpamSatisfied,
                format!(
                    "Service {name}: LB-IPAM has not taken it yet (no {} condition)",
                    IPAM_SATISFIED[0]
                ),
            )),
            Some(c) if c.status == "True" => {}
            Some(c) => out.push(finding(
                Check::IpamSatisfied,
                format!(
                    "Service {name}: {} is {} with reason {}: {}",
                    c.type_, c.status, c.reason, c.message
                ),
            )),
        }
    }
    out
}

/// No `CiliumLoadBalancerIPPool` is Conflicting (LB-IPAM allocates nothing from it).
pub fn no_pool_conflict(ctx: &Context<'_>) -> Vec<Finding> {
    ctx.live
        .pools
        .iter()
        .filter_map(|p| {
            let c = condition(&p.status.conditions, &POOL_CONFLICT)?;
            (c.status == "True").then(|| {
                finding(
                    Check::NoPoolConflict,
                    format!(
                        "CiliumLoadBalancerIPPool {} is Conflicting ({}): {}",
                        p.metadata.name, c.reason, c.message
                    ),
                )
            })
        })
        .collect()
}

/// Cilium's L2 Leases in the Cilium namespace, with their Service part of the name.
fn l2_leases<'a>(ctx: &'a Context<'_>) -> impl Iterator<Item = (&'a str, &'a Lease)> {
    ctx.live
        .leases
        .iter()
        .filter(|((ns, name), _)| ns == ctx.cilium_namespace && name.starts_with(LEASE_PREFIX))
        .map(|((_, name), l)| (name.as_str(), l))
}

fn holder(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()?
        .holder_identity
        .as_deref()
        .filter(|h| !h.is_empty())
}

/// While MetalLB announces, nobody else may: no `CiliumL2AnnouncementPolicy` exists and no
/// `cilium-l2announce-*` Lease has a holder.
pub fn no_foreign_announcer(ctx: &Context<'_>) -> Vec<Finding> {
    let mut out: Vec<Finding> = ctx
        .live
        .policies
        .iter()
        .map(|p| {
            finding(
                Check::NoForeignAnnouncer,
                format!(
                    "CiliumL2AnnouncementPolicy {} exists: Cilium may answer ARP while MetalLB does",
                    p.metadata.name
                ),
            )
        })
        .collect();
    for (name, lease) in l2_leases(ctx) {
        if let Some(node) = holder(lease) {
            out.push(finding(
                Check::NoForeignAnnouncer,
                format!(
                    "Lease {}/{name} is held by {node}: Cilium announces while MetalLB does",
                    ctx.cilium_namespace
                ),
            ));
        }
    }
    out
}

/// A MetalLB pod of `component` in phase Running or Pending: chart labels
/// `app.kubernetes.io/name: metallb` + `app.kubernetes.io/component`, or the manifests' `app:
/// metallb` + `component` (the predicate [`observed::wrap`] uses).
fn metallb_pods<'a>(ctx: &'a Context<'_>, component: &'a str) -> impl Iterator<Item = &'a Pod> {
    ctx.live.pods.iter().filter(move |pod| {
        let labels = pod.metadata.labels.as_ref();
        let label = |k: &str| labels.and_then(|l| l.get(k)).map(String::as_str);
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        observed::running_metallb_component(label, phase) == Some(component)
    })
}

fn pod_finding(check: Check, what: &str, pod: &Pod) -> Finding {
    let (ns, name) = key(&pod.metadata);
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("?");
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .map(|n| format!(" on node {n}"))
        .unwrap_or_default();
    finding(
        check,
        format!("MetalLB {what} pod {ns}/{name} is still {phase}{node}"),
    )
}

/// No MetalLB speaker pod is Running or Pending.
pub fn speaker_stopped(ctx: &Context<'_>) -> Vec<Finding> {
    metallb_pods(ctx, "speaker")
        .map(|p| pod_finding(Check::SpeakerStopped, "speaker", p))
        .collect()
}

/// No MetalLB controller pod is Running or Pending.
pub fn controller_stopped(ctx: &Context<'_>) -> Vec<Finding> {
    metallb_pods(ctx, "controller")
        .map(|p| pod_finding(Check::ControllerStopped, "controller", p))
        .collect()
}

/// Each Service Cilium's L2 announcer serves (no class or its class) has its Lease
/// `cilium-l2announce-<ns>-<name>` held by a node, unexpired at `now`
/// (`renewTime + leaseDurationSeconds`), and the node carries no
/// `node.kubernetes.io/exclude-from-external-load-balancers` (live, or in the plan's nodes).
///
/// The holder must also be a node Cilium may announce the Service from: one a
/// `CiliumL2AnnouncementPolicy` with `loadBalancerIPs` selects for it (the transition model's
/// [`l2announcer::announcers`], read from the live objects).
pub fn lease_held(ctx: &Context<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut cluster: Cluster = model::snapshot(&ctx.live.items).cluster;
    // A held Lease means the agents run the L2 announcer; the flag lives in Cilium's values,
    // which the live objects do not carry.
    cluster.flags.l2_announcements = true;
    for ((ns, svc_name), want) in &ctx.plan.services {
        if want.is_empty() {
            continue;
        }
        let svc = ctx.live.services.get(&(ns.clone(), svc_name.clone()));
        if svc.and_then(class).is_some_and(|c| c != L2_CLASS) {
            continue;
        }
        let lease_name = format!("{LEASE_PREFIX}{ns}-{svc_name}");
        let at = format!("{}/{lease_name}", ctx.cilium_namespace);
        let push = |out: &mut Vec<Finding>, m: String| {
            out.push(finding(
                Check::LeaseHeld,
                format!("Service {ns}/{svc_name}: {m}"),
            ));
        };
        let key = (ctx.cilium_namespace.to_owned(), lease_name);
        let Some(lease) = ctx.live.leases.get(&key) else {
            push(&mut out, format!("no Lease {at}: no node announces it"));
            continue;
        };
        let Some(node) = holder(lease) else {
            push(&mut out, format!("Lease {at} has no holder"));
            continue;
        };
        let spec = lease.spec.as_ref();
        let renew = spec.and_then(|s| s.renew_time.as_ref()).map(|t| t.0);
        let duration = spec.and_then(|s| s.lease_duration_seconds);
        match (renew, duration) {
            (Some(renew), Some(secs)) => {
                let until = renew
                    .checked_add(SignedDuration::from_secs(i64::from(secs)))
                    .unwrap_or(renew);
                if until < ctx.now {
                    push(
                        &mut out,
                        format!(
                            "Lease {at} held by {node} expired at {until} (renewed {renew}, {secs}s; now {})",
                            ctx.now
                        ),
                    );
                    continue;
                }
            }
            _ => {
                push(
                    &mut out,
                    format!("Lease {at} held by {node} has no renewTime or leaseDurationSeconds"),
                );
                continue;
            }
        }
        let live_node = ctx.live.nodes.get(node);
        let labelled = live_node
            .and_then(|n| n.metadata.labels.as_ref())
            .is_some_and(|l| l.contains_key(EXCLUDE_LB_LABEL));
        if labelled || ctx.plan.excluded_nodes.contains(node) {
            push(
                &mut out,
                format!(
                    "Lease {at} is held by {node}, a node MetalLB never announced from ({EXCLUDE_LB_LABEL}{})",
                    if labelled {
                        ""
                    } else {
                        " or NetworkUnavailable, per the plan"
                    }
                ),
            );
        } else if live_node.is_none() {
            push(
                &mut out,
                format!("Lease {at} is held by {node}, which is no Node of the cluster"),
            );
        } else {
            let key = SvcKey {
                namespace: ns.clone(),
                name: svc_name.clone(),
            };
            let candidates = l2announcer::announcers(&cluster, &key);
            if !candidates.contains(node) {
                let allowed: Vec<&str> = candidates.iter().map(String::as_str).collect();
                push(
                    &mut out,
                    format!(
                        "Lease {at} is held by {node}, which no CiliumL2AnnouncementPolicy selects for it (selected: {})",
                        if allowed.is_empty() {
                            "none".to_owned()
                        } else {
                            allowed.join(",")
                        }
                    ),
                );
            }
        }
    }
    out
}

/// No MetalLB `IPAddressPool` or `L2Advertisement` is left.
pub fn metallb_removed(ctx: &Context<'_>) -> Vec<Finding> {
    ctx.live
        .metallb
        .iter()
        .map(|(kind, o)| {
            let ns = o.metadata.namespace.as_deref().unwrap_or("default");
            finding(
                Check::MetallbRemoved,
                format!(
                    "MetalLB {kind} {ns}/{} is left: remove MetalLB",
                    o.metadata.name
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "services: {shop/web: 10.0.0.5, shop/new: ''}\nnodes: {cp1: {excludeFromExternalLoadBalancers: true}}\n";

    fn ctx_check(gate: Gate, live: &str, now: &str) -> Vec<Check> {
        let plan = Plan::parse(PLAN).unwrap();
        let live = Live::parse(live).unwrap();
        let ctx = Context {
            plan: &plan,
            live: &live,
            cilium_namespace: "kube-system",
            now: now.parse().unwrap(),
        };
        check(gate, &ctx).into_iter().map(|f| f.check).collect()
    }

    const WEB: &str = "- {apiVersion: v1, kind: Service, metadata: {name: web, namespace: shop}, spec: {type: LoadBalancer}, status: {loadBalancer: {ingress: [{ip: 10.0.0.5}]}}}\n";

    #[test]
    fn arguments() {
        let a =
            Args::parse(&["cutover", "--plan=p.yaml", "--now", "2026-01-01T00:00:00Z"]).unwrap();
        assert_eq!(a.gate, Gate::Cutover);
        assert_eq!(
            (a.plan.as_str(), a.cilium_namespace.as_str()),
            ("p.yaml", "kube-system")
        );
        assert!(a.now.is_some());
        let a = Args::parse(&[
            "--cilium-namespace",
            "cilium",
            "stop-speaker",
            "--plan",
            "p",
        ])
        .unwrap();
        assert_eq!(
            (a.gate, a.cilium_namespace.as_str()),
            (Gate::StopSpeaker, "cilium")
        );
        for bad in [
            &[][..],
            &["prepare"],
            &["--plan", "p"],
            &["later", "--plan", "p"],
            &["prepare", "--plan"],
            &["prepare", "--plan", "p", "-x"],
            &["prepare", "--plan", "p", "--now", "noon"],
        ] {
            assert!(Args::parse(bad).is_err(), "{bad:?}");
        }
    }

    /// A hand-written plan is a bare `services` mapping; a Service without IPs has nothing to
    /// keep; the nodes give the excluded set.
    #[test]
    fn plan() {
        let p = Plan::parse(PLAN).unwrap();
        assert_eq!(p.services.len(), 2);
        assert!(p.services[&("shop".into(), "new".into())].is_empty());
        assert_eq!(p.excluded_nodes, BTreeSet::from(["cp1".to_owned()]));
        assert!(Plan::parse("kind: ConfigMap\ndata: {}\n").is_err());
        assert!(Plan::parse("services: {web: 10.0.0.5}\n").is_err());
        assert!(Plan::parse("- a\n").is_err());
    }

    #[test]
    fn checks_carry_their_variant() {
        let list = |items: &str| format!("kind: List\nitems:\n{items}");
        let now = "2026-01-01T00:00:10Z";
        assert_eq!(ctx_check(Gate::StopSpeaker, &list(WEB), now), vec![]);
        assert_eq!(
            ctx_check(Gate::StopSpeaker, &list(""), now),
            vec![Check::IpsKept]
        );
        assert_eq!(
            ctx_check(Gate::Prepare, &list(WEB), now),
            vec![Check::IpamSatisfied]
        );
        let lease = |holder: &str, renew: &str| {
            format!(
                "- {{apiVersion: coordination.k8s.io/v1, kind: Lease, metadata: {{name: cilium-l2announce-shop-web, namespace: kube-system}}, spec: {{holderIdentity: {holder}, leaseDurationSeconds: 15, renewTime: \"{renew}\"}}}}\n"
            )
        };
        let nodes = "- {apiVersion: v1, kind: Node, metadata: {name: cp1}}\n- {apiVersion: v1, kind: Node, metadata: {name: w1}}\n- {apiVersion: cilium.io/v2alpha1, kind: CiliumL2AnnouncementPolicy, metadata: {name: all}, spec: {loadBalancerIPs: true}}\n";
        let ok = list(&format!(
            "{WEB}{nodes}{}",
            lease("w1", "2026-01-01T00:00:00.000000Z")
        ));
        assert_eq!(ctx_check(Gate::Cutover, &ok, now), vec![]);
        assert_eq!(
            ctx_check(Gate::Cutover, &ok, "2026-01-01T00:00:16Z"),
            vec![Check::LeaseHeld]
        );
        // cp1 carries no label live, but MetalLB excluded it per the plan.
        let cp = list(&format!(
            "{WEB}{nodes}{}",
            lease("cp1", "2026-01-01T00:00:00.000000Z")
        ));
        assert_eq!(ctx_check(Gate::Cutover, &cp, now), vec![Check::LeaseHeld]);
        let no_policy = ok.replace("kind: CiliumL2AnnouncementPolicy", "kind: Other");
        assert_eq!(
            ctx_check(Gate::Cutover, &no_policy, now),
            vec![Check::LeaseHeld]
        );
        assert_eq!(
            ctx_check(Gate::Prepare, &ok, now),
            vec![
                Check::IpamSatisfied,
                Check::NoForeignAnnouncer,
                Check::NoForeignAnnouncer
            ]
        );
        let pods = "- {apiVersion: v1, kind: Pod, metadata: {name: s, labels: {app: metallb, component: speaker}}, status: {phase: Pending}}\n- {apiVersion: v1, kind: Pod, metadata: {name: c, labels: {app.kubernetes.io/name: metallb, app.kubernetes.io/component: controller}}, status: {phase: Running}}\n- {apiVersion: v1, kind: Pod, metadata: {name: f, labels: {app: metallb, component: speaker}}, status: {phase: Failed}}\n";
        assert_eq!(
            ctx_check(Gate::StopSpeaker, &list(&format!("{WEB}{pods}")), now),
            vec![Check::SpeakerStopped, Check::ControllerStopped]
        );
    }
}
