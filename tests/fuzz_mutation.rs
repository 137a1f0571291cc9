//! Mutation fuzzing: the examples as kpt hands them over and generated platforms, damaged
//! (`fuzz/mutate.rs`: truncation, bit flips, YAML syntax inserted, invalid UTF-8, duplicated and
//! moved lines, tab indentation, BOM, CRLF, type swaps, huge strings, numbers past 64 bits, deep
//! flow and block nesting, alias bombs, missing or wrong `apiVersion`/`kind`/`metadata.name`,
//! several documents, tiny documents, odd `results` and `functionConfig`), then run in-process
//! through `cutover::function::process`. Every case must:
//!
//! - not panic (a panic hook counts them: `process` turns a panic into an "internal error");
//! - exit 0 or 1; stdout empty or exactly one ResourceList that parses (never empty with exit 0);
//! - hold at most `MEMORY_PER_INPUT_BYTE` × input + `MEMORY_FIXED` bytes at once, plus the
//!   alias expansion the engine allows when the input has aliases (a counting
//!   global allocator; a hard cap stops a runaway case before it takes the machine);
//! - finish within `FUZZ_TIME_LIMIT_MS` of CPU time (default 2 s in release, 60 s in debug)
//!   plus 100 ns per input byte (400 ns when the input has aliases); a watchdog aborts a case
//!   that hangs.
//!
//! Default: a fixed seed and a case count that runs in well under a minute in debug. Long runs:
//! `FUZZ_CASES=1000000 FUZZ_SEED=7 cargo test --release --test fuzz_mutation -- --nocapture`
//! (`FUZZ_KEEP_GOING=1`, `FUZZ_MUTATIONS=Truncate,AliasBomb`, `FUZZ_NO_SHRINK=1` as for the style
//! suite). A failure prints the seed, the case, the mutations and a minimised input (also in
//! `target/fuzz-failures/`); minimised inputs worth keeping are committed to
//! `tests/fuzz-regressions/`, which `regressions_stay_fixed` replays.

mod common;
mod fuzz;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use fuzz::bases::{self, Base};
use fuzz::bounds::{
    CASE, CURRENT_INPUT, Counting, MEASURING, case_finished, case_started, measured_peak, quiesce,
    start_measuring, start_watchdog, thread_cpu_time, time_limit,
};
use fuzz::check::{self, Failure, Finding};
use fuzz::mutate::{self, Mutation};
use fuzz::style;
use fuzz::{Rng, cases_from_env, known, seed_from_env};

const DEFAULT_SEED: u64 = 0x5EED_0002;
const DEFAULT_CASES: usize = 200;

/// Memory bound per case: peak bytes held ≤ this × input bytes + [`MEMORY_FIXED`], plus
/// [`memory_for_aliases`] when the input has aliases.
const MEMORY_PER_INPUT_BYTE: usize = 16;
const MEMORY_FIXED: usize = 64 << 20;

/// What the aliases of `input` may add: the engine expands aliases up to 256 Ki nodes plus one
/// per 4 input bytes (docs/reliability.md, "Limits"), a node costing about 100 bytes (128 here).
/// Only for inputs with a `*`: the others keep the tighter bound.
fn memory_for_aliases(input: &[u8]) -> usize {
    if input.contains(&b'*') {
        128 * ((256 << 10) + input.len() / 4)
    } else {
        0
    }
}

/// Every allocation of this test binary is counted (see `fuzz::bounds`).
#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The CPU time a case may take: `limit` plus [`TIME_PER_INPUT_BYTE`] per input byte, or
/// [`TIME_PER_INPUT_BYTE_WITH_ALIASES`] when the input has a `*`. Time, like memory, is bounded
/// in proportion to the input, not by a constant: reading is linear, and aliases may expand to
/// 256 Ki + input/4 nodes (docs/reliability.md, "Limits"), about 0.6 µs a node here, so a
/// 12.6 MB input padded with two 4 MiB strings around an alias bomb takes 2.1 s within the limits.
fn time_for(input: &[u8], limit: Duration) -> Duration {
    let per_byte = if input.contains(&b'*') {
        TIME_PER_INPUT_BYTE_WITH_ALIASES
    } else {
        TIME_PER_INPUT_BYTE
    };
    limit.saturating_add(per_byte * u32::try_from(input.len()).unwrap_or(u32::MAX))
}
const TIME_PER_INPUT_BYTE: Duration = Duration::from_nanos(100);
const TIME_PER_INPUT_BYTE_WITH_ALIASES: Duration = Duration::from_nanos(400);

// ---------------------------------------------------------------------------------------------
// One case.

/// What one run cost.
struct Cost {
    /// Time on a CPU (wall time where the platform does not say).
    cpu: Duration,
    peak: usize,
}

/// Runs the function on `input` under the contract and the bounds.
fn run_case(input: &[u8], limit: Duration) -> (Result<(), Finding>, Cost) {
    let _one = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    quiesce();
    if input.len() > 4 << 20 {
        *CURRENT_INPUT.lock().unwrap() = input.to_vec();
    } else {
        let mut current = CURRENT_INPUT.lock().unwrap();
        current.clear();
        current.extend_from_slice(input);
    }
    let base = start_measuring();
    case_started();
    let start = Instant::now();
    let cpu_start = thread_cpu_time();
    let run = check::run(input);
    let elapsed = start.elapsed();
    let cpu = match (cpu_start, thread_cpu_time()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => elapsed,
    };
    case_finished();
    let peak = measured_peak(base);
    let cost = Cost { cpu, peak };
    let verdict = check::contract(&run).map(|_| ()).and_then(|()| {
        fuzz::typed::untouched_keep_types(input, &run.out.stdout)?;
        check::reader_agrees(input)?;
        let bound = MEMORY_PER_INPUT_BYTE * input.len() + MEMORY_FIXED + memory_for_aliases(input);
        if peak > bound {
            return Err(Finding::new(
                Failure::Memory,
                format!(
                    "{peak} bytes held for {} bytes of input (bound {bound})",
                    input.len()
                ),
            ));
        }
        let time_bound = time_for(input, limit);
        if cpu > time_bound {
            return Err(Finding::new(
                Failure::Slow,
                format!(
                    "{cpu:?} of CPU, {elapsed:?} of wall time (bound {time_bound:?} of CPU) for {} bytes of input",
                    input.len()
                ),
            ));
        }
        Ok(())
    });
    (verdict, cost)
}

/// Removes lines, then bytes, while the same kind of failure remains.
fn minimise(input: &[u8], kind: &Failure, limit: Duration) -> Vec<u8> {
    let mut fails =
        |candidate: &[u8]| matches!(run_case(candidate, limit).0, Err(f) if &f.failure == kind);
    fuzz::shrink::bytes(input, &mut fails)
}

/// `FUZZ_MUTATIONS=A,B` restricts `allowed` to those families.
fn mutations_from_env(allowed: Vec<Mutation>) -> Vec<Mutation> {
    let Ok(list) = std::env::var("FUZZ_MUTATIONS") else {
        return allowed;
    };
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|name| {
            *Mutation::ALL
                .iter()
                .find(|m| format!("{m:?}") == name)
                .unwrap_or_else(|| panic!("FUZZ_MUTATIONS: unknown family {name:?}"))
        })
        .filter(|m| allowed.contains(m))
        .collect()
}

/// A seed document and its plain text.
struct Seed {
    base: Base,
    text: String,
}

fn seeds(rng: &mut Rng) -> Vec<Seed> {
    let mut out: Vec<Seed> = bases::examples()
        .iter()
        .map(|b| Seed {
            text: style::plain(&b.doc),
            base: b.clone(),
        })
        .collect();
    for &setup in bases::SETUPS {
        let base = bases::generated(setup, rng);
        // Also written in the styles the engine reads (see the style suite).
        let styled = style::write(
            &base.doc,
            rng.next(),
            &style::Features::without(known::STYLES),
            &Default::default(),
        );
        out.push(Seed {
            text: styled.text,
            base: base.clone(),
        });
        out.push(Seed {
            text: style::plain(&base.doc),
            base,
        });
    }
    out
}

fn fuzz_mutations(allowed: Vec<Mutation>) {
    check::install_panic_counter();
    let allowed = mutations_from_env(allowed);
    assert!(!allowed.is_empty(), "no mutation family to run");
    let seed = seed_from_env(DEFAULT_SEED);
    let cases = cases_from_env(DEFAULT_CASES);
    let keep_going = std::env::var_os("FUZZ_KEEP_GOING").is_some();
    let limit = time_limit();
    start_watchdog(limit);
    let start = Instant::now();
    let first = fuzz::first_case_from_env();
    // Fresh generated platforms every 500 cases, drawn from the block's number, so any case
    // replays alone (FUZZ_FIRST_CASE).
    let pool_for = |case: usize| seeds(&mut Rng::fork(seed ^ 0x5EED_5EED, (case / 500) as u64));
    let mut pool = pool_for(first);
    let mut failures: BTreeMap<Failure, usize> = BTreeMap::new();
    let (mut slowest, mut worst_ratio) = (Duration::ZERO, 0.0f64);
    let mut slowest_case = String::new();
    for case in first..cases {
        if case > first && case % 500 == 0 {
            pool = pool_for(case);
        }
        CASE.store(case, Ordering::SeqCst);
        let mut rng = Rng::fork(seed, case as u64);
        let s = &pool[rng.below(pool.len())];
        let mutated = mutate::mutate(&s.base.doc, &s.text, &allowed, &mut rng);
        let (verdict, cost) = run_case(&mutated.bytes, limit);
        if cost.cpu > slowest {
            slowest = cost.cpu;
            slowest_case = format!(
                "case {case} ({} bytes): {:?}",
                mutated.bytes.len(),
                mutated.applied
            );
        }
        if mutated.bytes.len() >= 64 << 10 {
            worst_ratio = worst_ratio.max(cost.peak as f64 / mutated.bytes.len() as f64);
        }
        if let Err(finding) = verdict {
            // Only the first failure of each kind is minimised (a long run may find many).
            let seen = failures.contains_key(&finding.failure);
            let minimal = if seen || std::env::var_os("FUZZ_NO_SHRINK").is_some() {
                mutated.bytes.clone()
            } else {
                eprintln!(
                    "fuzz_mutation: case {case} fails ({:?}); minimising {} bytes",
                    finding.failure,
                    mutated.bytes.len()
                );
                minimise(&mutated.bytes, &finding.failure, limit)
            };
            let path = fuzz::failure_dir().join(format!("mutation-{seed:x}-{case}.yaml"));
            std::fs::write(&path, &minimal).unwrap();
            let report = format!(
                "mutation case failed: {:?}\nreplay: FUZZ_SEED={seed:#x} FUZZ_FIRST_CASE={case} FUZZ_CASES={} (seed document {})\nmutations: {:?}\n{}\nminimised input ({} bytes): {}\n{}",
                finding.failure,
                case + 1,
                s.base.name,
                mutated.applied,
                fuzz::truncate(&finding.detail, 3_000),
                minimal.len(),
                path.display(),
                fuzz::truncate(&String::from_utf8_lossy(&minimal), 3_000)
            );
            if !keep_going {
                panic!("{report}");
            }
            eprintln!("{report}");
            *failures.entry(finding.failure).or_default() += 1;
        }
        if (case + 1) % 10_000 == 0 {
            // Case numbers, not counts: a shard (FUZZ_FIRST_CASE) says which cases it ran.
            eprintln!(
                "fuzz_mutation: cases {first}..{}, {:.0} s, slowest {slowest:?} of CPU, peak up to {worst_ratio:.1} x input (64 KiB+), failures {failures:?}",
                case + 1,
                start.elapsed().as_secs_f64()
            );
        }
    }
    eprintln!(
        "fuzz_mutation: seed {seed:#x}, cases {first}..{cases} ({} cases) in {:.1} s, slowest case {slowest:?} of CPU, peak memory up to {worst_ratio:.1} x input (inputs of 64 KiB and more), failures {failures:?}\nslowest: {}",
        cases.saturating_sub(first),
        start.elapsed().as_secs_f64(),
        fuzz::truncate(&slowest_case, 500)
    );
    assert!(failures.is_empty(), "failures: {failures:?}");
}

#[test]
fn mutations_keep_the_contract() {
    let allowed = Mutation::ALL
        .iter()
        .copied()
        .filter(|m| !known::MUTATIONS.contains(m))
        .collect();
    fuzz_mutations(allowed);
}

/// Every minimised input in `tests/fuzz-regressions/mutation/` keeps the contract (those listed in
/// [`known::REGRESSIONS`] must still break it, until the fix lands and the list shrinks).
#[test]
fn regressions_stay_fixed() {
    check::install_panic_counter();
    start_watchdog(Duration::from_secs(30));
    let dir = common::root().join("tests/fuzz-regressions/mutation");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| {
                let e = e.ok()?;
                e.file_type()
                    .ok()?
                    .is_file()
                    .then(|| e.file_name().to_string_lossy().into_owned())
            })
            .collect()
        })
        .unwrap_or_default();
    names.sort();
    for name in known::REGRESSIONS
        .iter()
        .filter_map(|n| n.strip_prefix("mutation/"))
    {
        assert!(
            names.iter().any(|n| n == name),
            "{name} is not in {}",
            dir.display()
        );
    }
    let mut unexpected = Vec::new();
    for name in &names {
        let input = std::fs::read(dir.join(name)).unwrap();
        // No time limit here: speed is for benchmarks; a hang still trips the watchdog.
        let (verdict, _) = run_case(&input, Duration::MAX);
        unexpected.extend(known::unexpected(&format!("mutation/{name}"), verdict));
    }
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
}

/// Found by a long run (`HugeString` on `functionConfig.apiVersion`): a 4 MiB value an error
/// names was repeated in the message, `resourceRef`, `field.currentValue` and on stderr, beside
/// the echoed `functionConfig` — 31 × the input in output and memory. Results now show such values
/// shortened (`krm::result::bound`); the echoed `functionConfig` keeps every byte.
#[test]
fn a_huge_value_an_error_names_is_shown_once() {
    check::install_panic_counter();
    let huge = "x".repeat(4 << 20);
    let input = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n  data:\n    k: v\nfunctionConfig:\n  apiVersion: {huge}\n  kind: LoadBalancerAnnouncer\n  metadata:\n    name: cutover\n  spec:\n    announcer: cilium\n    phase: prepare\n"
    );
    let run = check::run(input.as_bytes());
    let list = check::contract(&run)
        .unwrap_or_else(|f| panic!("{:?}: {}", f.failure, fuzz::truncate(&f.detail, 500)))
        .expect("a ResourceList with the error");
    assert_eq!(run.out.exit_code, 1);
    assert_eq!(list["functionConfig"]["apiVersion"].as_str(), Some(&*huge));
    let result = &list["results"][0];
    let shown = format!("… ({} bytes)", huge.len());
    for v in [
        &result["resourceRef"]["apiVersion"],
        &result["field"]["currentValue"],
    ] {
        assert!(v.as_str().is_some_and(|s| s.ends_with(&shown)), "{v:?}");
    }
    assert!(
        run.out.stdout.len() < input.len() + (16 << 10),
        "{} bytes of output for {} of input",
        run.out.stdout.len(),
        input.len()
    );
    assert!(
        run.out.stderr.len() < 8 << 10,
        "{}",
        fuzz::truncate(&run.out.stderr, 500)
    );
}

/// Found by a long run (seed `0x34`, case 627 402: `HugeString` and `AliasBomb` on phase
/// stop-speaker): a 1.5 MiB string raised the alias limit (256 Ki nodes plus one per 4 input
/// bytes) enough to let a bomb of 466 560 nodes into an `IPAddressPool`. The phase marks every
/// MetalLB object `kustomize.toolkit.fluxcd.io/ssa: IfNotPresent`, and did it on a copy of the
/// pool's tree, so the expanded nodes were held twice besides the output: 186 MB for 1.6 MB of
/// input, over the bound. The mark is now a patch of the pool's own tree.
#[test]
fn a_pool_holding_an_expanded_alias_bomb_is_marked_in_place() {
    check::install_panic_counter();
    let padding = "x".repeat(3 << 19);
    let bomb = alias_bomb(6, 6);
    let input = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n\
         - {{apiVersion: v1, kind: ConfigMap, metadata: {{name: padding}}, data: {{padding: {padding}}}}}\n\
         - apiVersion: metallb.io/v1beta1\n  kind: IPAddressPool\n  metadata: {{name: pool-a, namespace: metallb-system}}\n\
         \x20 bomb:\n{bomb}\
         \x20 spec: {{addresses: [10.101.0.0/16]}}\n\
         - {{apiVersion: metallb.io/v1beta1, kind: L2Advertisement, metadata: {{name: l2, namespace: metallb-system}}}}\n\
         - {{apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, metadata: {{name: metallb, namespace: metallb-system}}}}\n\
         - apiVersion: helm.toolkit.fluxcd.io/v2\n  kind: HelmRelease\n  metadata: {{name: cilium, namespace: kube-system}}\n\
         \x20 spec: {{chart: {{spec: {{chart: cilium, version: 1.18.4}}}}, values: {{kubeProxyReplacement: true}}}}\n\
         - apiVersion: v1\n  kind: Service\n  metadata: {{name: web, namespace: shop}}\n\
         \x20 spec: {{type: LoadBalancer, ports: [{{port: 443}}]}}\n  status: {{loadBalancer: {{ingress: [{{ip: 10.101.0.7}}]}}}}\n\
         functionConfig:\n  apiVersion: fn.cutover.dev/v1alpha1\n  kind: LoadBalancerAnnouncer\n  metadata: {{name: cutover}}\n\
         \x20 spec: {{announcer: cilium, phase: stop-speaker, ciliumOperatorStopped: true}}\n"
    );
    // The bomb went in (the phase ran and wrote the pool from its tree), not refused at the limit.
    assert_within_bounds(&input, 64 << 20);
}

/// Found by a long run (seed `0x34`, case 634 178: `PaddedAliasBomb` and `HugeString` on step
/// `handover` of the orchestrated cutover): a 4 MiB string let a bomb of 976 560 nodes into the
/// Cilium HelmRelease, which phase prepare edits. The chain's simulation of the phases held the
/// expanded release four times (the input, a copy of the items for the phases, the edited copy,
/// the phase's snapshot of it): 418 MB for 4.4 MB of input, over the bound. The release is now
/// copied only when its values change, phase prepare reads the input itself, and a phase's
/// snapshot of an item is copied only when a later phase changes the item.
#[test]
fn an_expanded_alias_bomb_in_a_release_the_chain_edits_is_held_twice_at_most() {
    check::install_panic_counter();
    let base = bases::examples()
        .iter()
        .find(|b| b.name == "example:announcer-orchestrated-handover")
        .expect("the hand-over example");
    let mut doc = base.doc.clone();
    let items = doc["items"].as_sequence_mut().unwrap();
    let cilium = items
        .iter_mut()
        .find(|i| i["kind"] == "HelmRelease" && i["metadata"]["name"] == "cilium")
        .expect("the Cilium release");
    cilium["bomb"] = "BOMB".into();
    items.push(
        serde_yaml::from_str(&format!(
            "{{apiVersion: v1, kind: ConfigMap, metadata: {{name: padding}}, data: {{padding: {}}}}}",
            "x".repeat(4 << 20)
        ))
        .unwrap(),
    );
    let bomb = format!("  bomb:\n{}", alias_bomb(7, 5));
    let text = serde_yaml::to_string(&doc).unwrap();
    assert_eq!(text.matches("  bomb: BOMB\n").count(), 1);
    let input = text.replace("  bomb: BOMB\n", &bomb);
    // The bomb went in (the chain ran with it), not refused at the limit.
    assert_within_bounds(&input, 128 << 20);
}

/// The entries of a block mapping, indented by four spaces, of an alias bomb: `l0` is a sequence
/// of ten scalars, each further `lN` a sequence of `width` aliases of `l(N-1)`, so the last one
/// expands to 10 × `width`^`levels` scalars.
fn alias_bomb(levels: usize, width: usize) -> String {
    let mut bomb = String::from("    l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
    for l in 1..=levels {
        let aliases = vec![format!("*l{}", l - 1); width].join(", ");
        bomb.push_str(&format!("    l{l}: &l{l} [{aliases}]\n"));
    }
    bomb
}

/// Runs a regression input through the suite's checks (the memory bound among them) and asserts
/// that it passes and that its peak is above `min_peak`: that the big structure went in, rather
/// than being refused at a limit before it could cost anything.
fn assert_within_bounds(input: &str, min_peak: usize) {
    let (verdict, cost) = run_case(input.as_bytes(), Duration::MAX);
    if let Err(f) = verdict {
        panic!("{:?}: {}", f.failure, fuzz::truncate(&f.detail, 500));
    }
    assert!(cost.peak > min_peak, "peak {} bytes", cost.peak);
}

/// A run's peak is its own thread's: what another test's thread holds meanwhile is not on it,
/// and what the run's thread holds is, even when another thread frees it.
#[test]
fn a_measured_peak_is_the_measuring_threads_own() {
    const MIB: usize = 1 << 20;
    let base = start_measuring();
    let elsewhere = std::thread::spawn(|| vec![1u8; 32 * MIB]).join().unwrap();
    assert!(
        measured_peak(base) < MIB,
        "another thread's {} MiB counted",
        elsewhere.len() / MIB
    );
    let own = vec![1u8; 8 * MIB];
    std::thread::spawn(move || drop(own)).join().unwrap();
    let peak = measured_peak(base);
    assert!(
        (8 * MIB..9 * MIB).contains(&peak),
        "{peak} bytes measured for 8 MiB held"
    );
    drop(elsewhere);
}

/// The watchdog goes by the case's CPU time, so a case starved by a loaded machine is not a
/// hang; a case past the bound of CPU, or blocked far past it in wall time, is.
#[test]
fn a_hang_is_cpu_time_past_the_bound_not_a_starved_case() {
    use fuzz::bounds::{WALL_FACTOR, is_hang};
    let hang = Duration::from_secs(20);
    let s = Duration::from_secs;
    // Starved: 1 s of CPU in 25 s of wall time (seed 0x34, case 207 889, beside a build).
    assert!(!is_hang(s(25), Some(s(1)), hang));
    assert!(is_hang(s(21), Some(s(21)), hang));
    // Blocked, using no CPU: a hang once the wall-time bound is passed.
    assert!(!is_hang(hang * WALL_FACTOR, Some(s(0)), hang));
    assert!(is_hang(hang * WALL_FACTOR + s(1), Some(s(0)), hang));
    // Where CPU time is unknown, wall time decides.
    assert!(is_hang(s(21), None, hang));
    assert!(!is_hang(s(19), None, hang));
}

/// The watchdog reads the case's thread's CPU time from its own thread.
#[test]
fn a_threads_cpu_time_is_read_from_another_thread() {
    use fuzz::bounds::{current_task, task_cpu_time};
    let (ready, wait) = std::sync::mpsc::channel();
    let (done, finish) = std::sync::mpsc::channel::<()>();
    let worker = std::thread::spawn(move || {
        let task = current_task().expect("a Linux task id");
        let start = thread_cpu_time().unwrap();
        let mut x = 0u64;
        while thread_cpu_time().unwrap() - start < Duration::from_millis(100) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        ready.send((task, thread_cpu_time().unwrap())).unwrap();
        finish.recv().unwrap();
    });
    let (task, own) = wait.recv().unwrap();
    assert_ne!(Some(task), current_task());
    let read = task_cpu_time(task).expect("the worker's schedstat");
    assert!(
        read >= own && read >= Duration::from_millis(100),
        "{read:?} read, {own:?} by the thread itself"
    );
    done.send(()).unwrap();
    worker.join().unwrap();
}
