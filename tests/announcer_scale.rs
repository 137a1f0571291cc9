//! Memory of the announcer stays proportional to its input, whatever the shape of the MetalLB
//! configuration: thousands of opt-in pools, advertisements and Services; auto-assign pools up to
//! the bound on selector sizes, and an error (not gigabytes) past it. Measured with a counting
//! global allocator (peak bytes held at once), not with timings: the checks are exact and do not
//! depend on the machine's load.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The system allocator, counting the bytes held and their peak.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let held = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(held, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, new_size) };
        if !q.is_null() {
            if new_size >= layout.size() {
                let grow = new_size - layout.size();
                let held = HELD.fetch_add(grow, Ordering::Relaxed) + grow;
                PEAK.fetch_max(held, Ordering::Relaxed);
            } else {
                HELD.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One test at a time: the counters are global to the test binary, so another test building
/// or dropping its input while one measures would move the count.
static SERIAL: Mutex<()> = Mutex::new(());

/// Taken first by every test, for its whole run.
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs the function on `input`; returns its output and the peak bytes it held beyond what was
/// held before (the input itself is already held and not counted). The caller holds [`serial`].
fn measure(input: &str) -> (cutover::Output, usize) {
    wait_for_background_frees();
    let base = HELD.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = cutover::process(input.as_bytes());
    let peak = PEAK.load(Ordering::Relaxed) - base;
    (out, peak)
}

/// Waits until the threads on which earlier runs free their trees (`cutover-free`) are gone:
/// their frees lower the count while the next run is measured, and a peak measured from a base
/// that then falls reads too low.
fn wait_for_background_frees() {
    let freeing = || {
        std::fs::read_dir("/proc/self/task").is_ok_and(|tasks| {
            tasks.flatten().any(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|name| name.trim() == "cutover-free")
            })
        })
    };
    while freeing() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// What the MetalLB configuration looks like.
#[derive(Clone, Copy)]
enum Shape {
    /// `n` auto-assign pools, one L2Advertisement for all, `n` Services with pinned IPs.
    Auto,
    /// `n` auto-assign pools among `n + 1` (one opt-in pool), otherwise as `Auto`.
    AutoButOne,
    /// `n` opt-in pools, one L2Advertisement each, `n` Services asking for their pool.
    OptIn,
}

/// A ResourceList as kpt hands it over (path and index annotations), phase `cutover`.
fn platform(shape: Shape, n: usize) -> String {
    let mut out = String::from("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n");
    let ann = |out: &mut String, path: &str, i: usize| {
        let _ = write!(
            out,
            "    annotations:\n      config.kubernetes.io/index: '{i}'\n      config.kubernetes.io/path: '{path}'\n"
        );
    };
    let pools = match shape {
        Shape::AutoButOne => n + 1,
        Shape::Auto | Shape::OptIn => n,
    };
    for p in 0..pools {
        let _ = write!(
            out,
            "- apiVersion: metallb.io/v1beta1\n  kind: IPAddressPool\n  metadata:\n    name: pool-{p:05}\n    namespace: metallb-system\n"
        );
        ann(&mut out, "pools.yaml", p);
        let _ = writeln!(
            out,
            "  spec:\n    addresses:\n    - 10.{}.{}.0/24",
            p / 256,
            p % 256
        );
        if matches!(shape, Shape::OptIn) || (matches!(shape, Shape::AutoButOne) && p == n) {
            out.push_str("    autoAssign: false\n");
        }
    }
    let adverts = if matches!(shape, Shape::OptIn) { n } else { 1 };
    for a in 0..adverts {
        let _ = write!(
            out,
            "- apiVersion: metallb.io/v1beta1\n  kind: L2Advertisement\n  metadata:\n    name: l2-{a:05}\n    namespace: metallb-system\n"
        );
        ann(&mut out, "l2.yaml", a);
        if matches!(shape, Shape::OptIn) {
            let _ = writeln!(out, "  spec:\n    ipAddressPools:\n    - pool-{a:05}");
        } else {
            out.push_str("  spec:\n    interfaces:\n    - eth0\n");
        }
    }
    for s in 0..n {
        let p = s % n;
        let _ = write!(
            out,
            "- apiVersion: v1\n  kind: Service\n  metadata:\n    name: svc-{s:05}\n    namespace: apps\n    annotations:\n      metallb.io/loadBalancerIPs: 10.{}.{}.7\n",
            p / 256,
            p % 256
        );
        if matches!(shape, Shape::OptIn) {
            let _ = writeln!(out, "      metallb.io/address-pool: pool-{p:05}");
        }
        let _ = write!(
            out,
            "      config.kubernetes.io/index: '{s}'\n      config.kubernetes.io/path: 'services.yaml'\n  spec:\n    type: LoadBalancer\n    ports:\n    - port: 80\n      protocol: TCP\n"
        );
    }
    out.push_str(
        "functionConfig:\n  apiVersion: fn.cutover.dev/v1alpha1\n  kind: LoadBalancerAnnouncer\n  metadata:\n    name: cutover\n  spec:\n    announcer: cilium\n    phase: cutover\n    ciliumVersion: 1.18.4\n    ciliumOperatorStopped: true\n",
    );
    out
}

const MIB: usize = 1 << 20;

/// The bound every run here must keep: peak bytes ≤ K × input + C. K covers what the run holds
/// per input byte (the MetalLB items as trees, the generated Cilium objects and their emitted
/// text, the coverage proof's per-Service facts); C the fixed part, including selectors up to the
/// bound on their size (65 536 pool names).
const K: usize = 48;
const C: usize = 32 * MIB;

/// [`measure`], the figures on stderr (`what`: which run), and the bound K × input + C checked.
fn measure_within_bound(what: &str, input: &str) -> (cutover::Output, usize) {
    let (out, peak) = measure(input);
    eprintln!(
        "{what}: input {} bytes, peak {peak} bytes ({:.1} x input)",
        input.len(),
        peak as f64 / input.len() as f64
    );
    assert!(
        peak <= K * input.len() + C,
        "{what}: peak {peak} bytes for {} bytes of input (bound {K} x input + {C})",
        input.len()
    );
    (out, peak)
}

fn check(shape: Shape, n: usize, exit_code: i32) -> usize {
    let input = platform(shape, n);
    let (out, peak) = measure_within_bound(&format!("n={n}"), &input);
    assert_eq!(out.exit_code, exit_code, "{}", out.stderr);
    peak
}

/// 3 000 auto-assign pools took 2.1 GiB (each pool's selector listed the 2 999 others): now an
/// error naming the bound, with the items echoed, in bounded memory.
#[test]
fn thousands_of_auto_assign_pools_are_an_error_in_bounded_memory() {
    let _serial = serial();
    let input = platform(Shape::Auto, 3_000);
    let (out, peak) = measure(&input);
    assert_eq!(out.exit_code, 1);
    assert!(
        out.stderr
            .contains("3000 auto-assign pools among 3000 pools")
            && out.stderr.contains("more than 65536 pool names"),
        "{}",
        out.stderr
    );
    assert!(
        peak <= 8 * input.len() + C,
        "peak {peak} bytes for {} bytes of input",
        input.len()
    );
}

/// Up to the bound the selectors are exact, and memory is within K × input + C.
#[test]
fn auto_assign_pools_at_the_bound_translate_in_bounded_memory() {
    let _serial = serial();
    check(Shape::AutoButOne, 256, 0);
}

/// Opt-in pools, one advertisement each, Services asking for them: memory grows linearly (three
/// times the input, about three times the peak; a quadratic step would give nine). The bound is
/// six: buffers grow by doubling, so one run's peak can sit just past a doubling that the other
/// run's peak just missed (4.1 times has been seen).
#[test]
fn opt_in_pools_and_advertisements_scale_linearly() {
    let _serial = serial();
    let small = check(Shape::OptIn, 500, 0);
    let large = check(Shape::OptIn, 1_500, 0);
    assert!(
        large <= 6 * small,
        "peak {small} bytes at 500 pools but {large} at 1 500: not proportional"
    );
}

/// A pool whose name cannot be a label value (a 512 KiB name among 257 pools) is an error on
/// that pool, and the 255 other auto-assign pools do not list it: each listed name is a label
/// value of at most 63 bytes, so the selectors stay within the fixed bound whatever the names'
/// length (listing it made a copy per pool, 255 times the name).
#[test]
fn a_pool_name_longer_than_a_label_value_is_an_error_listed_nowhere() {
    let _serial = serial();
    let long = "p".repeat(512 * 1024);
    let input = platform(Shape::AutoButOne, 256).replacen(
        "name: pool-00000\n",
        &format!("name: {long}\n"),
        1,
    );
    let (out, _) = measure_within_bound("512 KiB pool name", &input);
    assert_eq!(out.exit_code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("metadata.name: pool name is longer than 63 characters"),
        "{}",
        out.stderr
    );
}

/// A Service whose namespace the API server would refuse (512 KiB long) in a sharing key of 256
/// Services is an error on that namespace: its members' `sharing-cross-namespace` lists do not
/// repeat it (listing it made a copy per member, 256 times the name).
#[test]
fn a_namespace_longer_than_a_label_is_an_error_listed_nowhere() {
    let _serial = serial();
    let long = "n".repeat(512 * 1024);
    let input = platform(Shape::AutoButOne, 256)
        .replace(
            "    annotations:\n      metallb.io/loadBalancerIPs:",
            "    annotations:\n      metallb.io/allow-shared-ip: k\n      metallb.io/loadBalancerIPs:",
        )
        .replacen(
            "name: svc-00000\n    namespace: apps\n",
            &format!("name: svc-00000\n    namespace: {long}\n"),
            1,
        );
    assert!(input.contains("allow-shared-ip") && input.contains(&long));
    let (out, _) = measure_within_bound("512 KiB namespace", &input);
    assert_eq!(out.exit_code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("metadata.namespace: not a namespace name"),
        "{}",
        out.stderr
    );
}

/// One sharing key across 4 000 Services, each in its own namespace: the `sharing-cross-namespace`
/// annotation is `*` past 16 namespaces, so memory stays within K × input + C (listing every
/// namespace on every member grew as members × namespaces).
#[test]
fn one_sharing_key_across_thousands_of_namespaces_stays_proportional() {
    let _serial = serial();
    let input = platform(Shape::OptIn, 4_000);
    let mut parts = input.split("    namespace: apps\n    annotations:\n");
    let mut shared = parts.next().unwrap().to_owned();
    for (s, rest) in parts.enumerate() {
        let _ = write!(
            shared,
            "    namespace: ns-{s:05}\n    annotations:\n      metallb.io/allow-shared-ip: k\n{rest}"
        );
    }
    assert_eq!(shared.matches("allow-shared-ip").count(), 4_000);
    let (out, _) = measure_within_bound("4 000 namespaces", &shared);
    assert_eq!(out.exit_code, 0, "{}", out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let items = stdout.split("\nresults:").next().unwrap();
    assert_eq!(
        items
            .matches("lbipam.cilium.io/sharing-cross-namespace: \"*\"\n")
            .count(),
        4_000
    );
}
