//! criterion benchmarks of the engine, in-process: parse, transform per mode, emit, and the whole
//! function (`cutover::process`) next to the identity floor (parse + emit). Inputs come from the
//! same generator as `cutover-gen` (see `docs/benchmarks.md`). 100k Services are measured only
//! whole-process (`benches/whole-process.sh`): one iteration takes seconds.
//!
//! `cargo bench --bench engine` (all), `cargo bench --bench engine -- parse/` (one group).

#[path = "../src/bin/cutover-gen/generate/mod.rs"]
#[allow(dead_code)]
mod generate;

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use cutover::krm::{apply, io};

/// (name, input bytes): the presets small enough for repeated in-process runs.
fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    ["lb-1k", "lb-10k", "sylva"]
        .into_iter()
        .map(|name| {
            let spec = generate::Spec::preset(name).expect("preset");
            (name, generate::generate(&spec).into_bytes())
        })
        .collect()
}

/// Each item's input text, as `cutover-identity` and the function copy unchanged items.
fn verbatim<'a>(input: &'a [u8], list: &io::ResourceList) -> Vec<Option<&'a str>> {
    let text = std::str::from_utf8(input).expect("UTF-8");
    list.item_spans
        .iter()
        .map(|span| {
            span.clone()
                .and_then(|s| text.get(s.start as usize..s.end as usize))
        })
        .collect()
}

fn engine(c: &mut Criterion) {
    let inputs = inputs();

    let mut group = c.benchmark_group("parse");
    for (name, input) in &inputs {
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function(*name, |b| {
            b.iter(|| io::parse(black_box(input)).expect("parse"))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("emit");
    for (name, input) in &inputs {
        let list = io::parse(input).expect("parse");
        group.throughput(Throughput::Bytes(input.len() as u64));
        // Every item emitted (what a run that changed every item pays) ...
        group.bench_function(format!("all/{name}"), |b| {
            b.iter(|| {
                io::write(
                    black_box(&list.items),
                    &[],
                    list.function_config.as_ref(),
                    &list.results,
                    &[],
                )
                .expect("emit")
            })
        });
        // ... and every item copied from its input text (a run that changed nothing).
        let verbatim = verbatim(input, &list);
        group.bench_function(format!("verbatim/{name}"), |b| {
            b.iter(|| {
                io::write(
                    black_box(&list.items),
                    &verbatim,
                    list.function_config.as_ref(),
                    &list.results,
                    &[],
                )
                .expect("emit")
            })
        });
    }
    group.finish();

    // Config decoding + the mode + applying its edits; the clone of the items is setup, not timed.
    let mut group = c.benchmark_group("transform");
    for (name, input) in &inputs {
        let list = io::parse(input).expect("parse");
        let fc = list.function_config.as_ref();
        let Ok(config) = cutover::config::parse(fc) else {
            continue;
        };
        let mode = config.kind().mode();
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function(format!("{mode}/{name}"), |b| {
            b.iter_batched(
                || list.items.clone(),
                |mut items| {
                    let outcome = cutover::modes::run(&config, black_box(&items), fc);
                    if !outcome.results.iter().any(|r| r.is_error()) {
                        let _ = apply::apply(&mut items, outcome.edits);
                    }
                    (items, outcome.results)
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();

    let mut group = c.benchmark_group("whole");
    for (name, input) in &inputs {
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function(format!("identity/{name}"), |b| {
            b.iter(|| {
                let list = io::parse(black_box(input)).expect("parse");
                io::write(
                    &list.items,
                    &verbatim(input, &list),
                    list.function_config.as_ref(),
                    &list.results,
                    &[],
                )
                .expect("emit")
            })
        });
        group.bench_function(format!("cutover/{name}"), |b| {
            b.iter(|| cutover::process(black_box(input)))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = engine
}
criterion_main!(benches);
