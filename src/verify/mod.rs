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
//! hand-written plan needs only `services`. The orchestrated chain's plan adds, as a second
//! document, the `ExpectedState` ([`crate::modes::announcer::expected`]): the Cilium pools and
//! L2 policies after cutover and the policies announcing each Service, which the cutover and
//! cleanup gates check.
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

mod checks;
mod from_model;
mod live;
mod plan;

use checks::*;
pub use from_model::model_items;
pub use live::*;
pub use plan::*;

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
                   by a node a CiliumL2AnnouncementPolicy selects and MetalLB did not exclude;
                   with an expected end state: its pools and policies exist, no other L2
                   policy does, and the holder is selected by one of its policies
    cleanup        as cutover, and no MetalLB pod Running or Pending, no MetalLB IPAddressPool
                   or L2Advertisement left (the only gate that reads them: give it
                   ipaddresspools.metallb.io,l2advertisements.metallb.io while MetalLB's CRDs
                   are served)

OPTIONS:
    --plan FILE              the ObservedState item `cutover observe` wrote before prepare
                             (at least `services: {<ns>/<name>: <ip>[,<ip>]}`), optionally
                             followed (after `---`) by the ExpectedState item the
                             orchestrated chain writes (its plan ConfigMap holds both)
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
    /// After the cleanup: as `Cutover`, and MetalLB is gone (pods, pools, advertisements).
    Cleanup,
}

impl Gate {
    /// The gate named as on the command line.
    pub fn from_name(name: &str) -> Option<Gate> {
        match name {
            "prepare" => Some(Gate::Prepare),
            "stop-speaker" => Some(Gate::StopSpeaker),
            "cutover" => Some(Gate::Cutover),
            "cleanup" => Some(Gate::Cleanup),
            _ => None,
        }
    }

    /// The name on the command line and in every line printed.
    pub fn name(self) -> &'static str {
        match self {
            Gate::Prepare => "prepare",
            Gate::StopSpeaker => "stop-speaker",
            Gate::Cutover => "cutover",
            Gate::Cleanup => "cleanup",
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
                        "unknown gate {name:?}: expected prepare, stop-speaker, cutover or cleanup"
                    ))?);
                }
                extra => return Err(format!("unexpected argument {extra:?}")),
            }
        }
        let gate = gate.ok_or("missing GATE (prepare, stop-speaker, cutover or cleanup)")?;
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
    /// The Cilium pools and L2 policies are those of the plan's expected end state.
    ExpectedObjects,
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
        Gate::Cutover => &[ips_kept, expected_objects, lease_held],
        Gate::Cleanup => &[
            ips_kept,
            expected_objects,
            lease_held,
            speaker_stopped,
            controller_stopped,
            metallb_removed,
        ],
    };
    checks.iter().flat_map(|c| c(ctx)).collect()
}

#[cfg(test)]
mod tests;
