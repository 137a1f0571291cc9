// Times the kpt-WASM module inside one node process, the way kpt's glue drives it. Not run alone:
// benches/kpt-wasm.sh appends it to Go's wasm_exec.js as kpt writes it (taken from a kpt run,
// which defines `Go`, `fs` and `performance`), and sets KPT_FN_WASM_PATH, INPUT and RUNS (and
// OUTPUT: a file for the last call's output, to compare with the native binary's).
//
// Prints one JSON line: compile and instantiate+run times, then every processResourceList call
// (the first one grows the module's memory; later calls reuse it), in milliseconds.
{
    const input = fs.readFileSync(process.env.INPUT, 'utf-8');
    const runs = Number(process.env.RUNS || 10);
    const bytes = fs.readFileSync(process.env.KPT_FN_WASM_PATH);
    let t = performance.now();
    const module = new WebAssembly.Module(bytes);
    const compile = performance.now() - t;
    const go = new Go();
    t = performance.now();
    const instance = new WebAssembly.Instance(module, go.importObject);
    go.run(instance);
    const start = performance.now() - t;
    const calls = [];
    let output = '';
    for (let i = 0; i < runs; i++) {
        t = performance.now();
        output = processResourceList(input);
        calls.push(performance.now() - t);
    }
    if (!output.includes('kind: ResourceList')) {
        throw new Error('no ResourceList in the output: ' + output.slice(0, 200));
    }
    if (process.env.OUTPUT) {
        fs.writeFileSync(process.env.OUTPUT, output);
    }
    const later = calls.slice(1);
    const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
    console.log(JSON.stringify({
        module_bytes: bytes.length,
        input_bytes: Buffer.byteLength(input),
        output_bytes: Buffer.byteLength(output),
        compile_ms: compile,
        instantiate_run_ms: start,
        first_call_ms: calls[0],
        later_calls_mean_ms: later.length ? mean(later) : null,
        later_calls_min_ms: later.length ? Math.min(...later) : null,
        exit_code: process.exitCode || 0,
        memory_mib: instance.exports.mem.buffer.byteLength / 1048576,
    }));
}
