//! `cutover-gen`: writes a deterministic benchmark ResourceList (see `docs/benchmarks.md`).
//!
//! ```text
//! cutover-gen lb-10k > lb-10k.yaml
//! cutover-gen --services 5000 --pools 12 --units 0 --config announcer --seed 3 -o out.yaml
//! ```

mod generate;

use std::io::Write;
use std::process::ExitCode;

use generate::{Config, PRESETS, Spec};

const USAGE: &str = "\
cutover-gen — deterministic ResourceList generator for cutover benchmarks

USAGE:
    cutover-gen [PRESET] [OPTIONS]

PRESETS (start values, options override them):
    lb-1k, lb-10k, lb-100k   N LoadBalancer Services (40 per namespace), 8 IPAddressPools,
                             4 L2Advertisements, MetalLB + Cilium HelmReleases, LoadBalancerAnnouncer
                             config (announcer: cilium, phase: prepare; MetalLB speaker running)
    lb-1k-cutover, ...       the same with phase: cutover (speaker already disabled)
    sylva                    150 Sylva unit Kustomizations + sylva-units-values Secret, 24 Services,
                             3 pools, 2 L2Advertisements, MetalLBImagePrepull config
    platform-10k, -100k      lb-N-cutover plus N items no mode reads (12 Deployments, 5 ConfigMaps,
                             2 HelmReleases of other charts, 1 CRD in every 20)
    sylva-platform           sylva plus 2 000 items no mode reads

OPTIONS:
    --services N             LoadBalancer Services
    --namespaces N           tenant namespaces the Services are spread over
    --pools N                MetalLB IPAddressPools (1..=150)
    --l2-advertisements N    MetalLB L2Advertisements (1..=pools)
    --units N                Sylva unit Kustomizations (0, or at least 8)
    --pass-through N         items no mode reads (see platform-10k)
    --config KIND            none | announcer (= announcer-prepare) | announcer-cutover | prepull
    --seed N                 PRNG seed (same arguments, same bytes)
    -o, --output FILE        write to FILE instead of stdout
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("cutover-gen: {message}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let mut spec = Spec::load_balancers(1_000);
    let mut output = None;
    let mut it = args.iter();
    let mut first = true;
    while let Some(arg) = it.next() {
        if first && !arg.starts_with('-') {
            spec = Spec::preset(arg)
                .ok_or_else(|| format!("unknown preset {arg:?}: expected one of {PRESETS:?}"))?;
            first = false;
            continue;
        }
        first = false;
        if arg == "-h" || arg == "--help" {
            print!("{USAGE}");
            return Ok(());
        }
        let value = it
            .next()
            .ok_or_else(|| format!("{arg} needs a value"))?
            .as_str();
        let number = || {
            value
                .parse::<usize>()
                .map_err(|_| format!("{arg}: {value:?} is not a number"))
        };
        match arg.as_str() {
            "--services" => spec.services = number()?,
            "--namespaces" => spec.namespaces = number()?,
            "--pools" => spec.pools = number()?,
            "--l2-advertisements" => spec.l2_advertisements = number()?,
            "--units" => spec.units = number()?,
            "--pass-through" => spec.pass_through = number()?,
            "--seed" => spec.seed = number()? as u64,
            "--config" => {
                spec.config = Config::parse(value)
                    .ok_or_else(|| format!("--config: unknown kind {value:?}"))?
            }
            "-o" | "--output" => output = Some(value.to_owned()),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    spec.validate()?;
    let text = generate::generate(&spec);
    match output {
        Some(path) => std::fs::write(&path, text).map_err(|e| format!("cannot write {path}: {e}")),
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .map_err(|e| format!("cannot write stdout: {e}")),
    }
}
