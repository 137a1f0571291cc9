// Times the kpt-WASM module inside one node process, the way kpt's glue drives it. Not run alone:
// benches/kpt-wasm.sh appends it to Go's wasm_exec.js as kpt writes it (taken from a kpt run,
// which defines `Go`, `fs` and `performance`), and sets KPT_FN_WASM_PATH, INPUT and RUNS (and
// OUTPUT: a file for the last call's output, to compare with the native binary's).
//
// Prints one JSON line: compile and instantiate+run times, then the processResourceList calls
// (the first one grows the module's memory and runs in V8's baseline code while the optimizing
// tier compiles in the background; later calls reuse both), in milliseconds: wall clock, and CPU
// (user + system of the whole process, V8's compiler threads included: steadier on a busy machine).
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
    const cpu = [];
    let output = '';
    for (let i = 0; i < runs; i++) {
        const c = process.cpuUsage();
        t = performance.now();
        output = processResourceList(input);
        calls.push(performance.now() - t);
        const used = process.cpuUsage(c);
        cpu.push((used.user + used.system) / 1000);
    }
    if (!output.includes('kind: ResourceList')) {
        throw new Error('no ResourceList in the output: ' + output.slice(0, 200));
    }
    if (process.env.OUTPUT) {
        fs.writeFileSync(process.env.OUTPUT, output);
    }
    const later = calls.slice(1);
    const laterCpu = cpu.slice(1);
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
        first_call_cpu_ms: cpu[0],
        later_calls_cpu_mean_ms: laterCpu.length ? mean(laterCpu) : null,
        exit_code: process.exitCode || 0,
        memory_mib: instance.exports.mem.buffer.byteLength / 1048576,
    }));
}
