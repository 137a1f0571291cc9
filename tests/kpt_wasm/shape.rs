//! The module's shape, without kpt or node: Go's `js/wasm` imports and exports, nothing else.

use wasmparser::{ExternalKind, Parser, Payload, TypeRef, ValType};

use crate::module;

/// Every import Go's `js/wasm` port may make of module `go` (kpt's wasm_exec.js provides them).
const GO_IMPORTS: &[&str] = &[
    "runtime.wasmExit",
    "runtime.wasmWrite",
    "runtime.resetMemoryDataView",
    "runtime.nanotime1",
    "runtime.walltime",
    "runtime.scheduleTimeoutEvent",
    "runtime.clearTimeoutEvent",
    "runtime.getRandomData",
    "syscall/js.finalizeRef",
    "syscall/js.stringVal",
    "syscall/js.valueGet",
    "syscall/js.valueSet",
    "syscall/js.valueDelete",
    "syscall/js.valueIndex",
    "syscall/js.valueSetIndex",
    "syscall/js.valueCall",
    "syscall/js.valueInvoke",
    "syscall/js.valueNew",
    "syscall/js.valueLength",
    "syscall/js.valuePrepareString",
    "syscall/js.valueLoadString",
    "syscall/js.valueInstanceOf",
    "syscall/js.copyBytesToGo",
    "syscall/js.copyBytesToJS",
];

/// A function type: parameters, then results.
type Signature = (Vec<ValType>, Vec<ValType>);

/// What the module imports and exports, with the types of its functions.
#[derive(Default)]
struct Shape {
    /// Function types by type index.
    types: Vec<Signature>,
    /// The type index of every function, imports first (the function index space).
    func_types: Vec<u32>,
    /// Imports: module, name, type index.
    imports: Vec<(String, String, u32)>,
    /// Exports: name, kind, index.
    exports: Vec<(String, ExternalKind, u32)>,
}

impl Shape {
    fn read(bytes: &[u8]) -> Shape {
        let mut shape = Shape::default();
        for payload in Parser::new(0).parse_all(bytes) {
            match payload.unwrap() {
                Payload::TypeSection(reader) => {
                    for ty in reader.into_iter_err_on_gc_types() {
                        let ty = ty.unwrap();
                        shape
                            .types
                            .push((ty.params().to_vec(), ty.results().to_vec()));
                    }
                }
                Payload::ImportSection(reader) => {
                    for import in reader.into_imports() {
                        let import = import.unwrap();
                        let TypeRef::Func(ty) = import.ty else {
                            panic!("import {}.{} is not a function", import.module, import.name);
                        };
                        shape
                            .imports
                            .push((import.module.into(), import.name.into(), ty));
                        shape.func_types.push(ty);
                    }
                }
                Payload::FunctionSection(reader) => {
                    for ty in reader {
                        shape.func_types.push(ty.unwrap());
                    }
                }
                Payload::ExportSection(reader) => {
                    for export in reader {
                        let export = export.unwrap();
                        shape
                            .exports
                            .push((export.name.into(), export.kind, export.index));
                    }
                }
                _ => {}
            }
        }
        shape
    }

    fn signature(&self, ty: u32) -> Signature {
        self.types[ty as usize].clone()
    }

    fn export(&self, name: &str) -> &(String, ExternalKind, u32) {
        self.exports
            .iter()
            .find(|(n, _, _)| n == name)
            .unwrap_or_else(|| panic!("export {name} missing; exports: {:?}", self.exports))
    }
}

#[test]
fn module_speaks_gos_js_wasm_abi_and_nothing_else() {
    let bytes = std::fs::read(module()).unwrap();
    assert!(
        bytes.len() < 3 << 20,
        "module is {} bytes, over the 3 MiB budget",
        bytes.len()
    );
    wasmparser::Validator::new()
        .validate_all(&bytes)
        .expect("a valid module");
    let shape = Shape::read(&bytes);
    check_imports(&shape);
    check_exports(&shape);
}

/// Every import is one of Go's `go` imports (kpt's wasm_exec.js), taking Go's stack pointer.
fn check_imports(shape: &Shape) {
    assert!(!shape.imports.is_empty());
    for (module, name, ty) in &shape.imports {
        assert_eq!(
            module, "go",
            "import {module}.{name}: kpt provides only module `go`"
        );
        assert!(
            GO_IMPORTS.contains(&name.as_str()),
            "unknown import go.{name}"
        );
        assert_eq!(
            shape.signature(*ty),
            (vec![ValType::I32], vec![]),
            "import go.{name} takes Go's stack pointer and returns nothing"
        );
    }
    // It must never exit (the glue would refuse to resume it) and must report memory growth.
    let names: Vec<&str> = shape.imports.iter().map(|(_, n, _)| n.as_str()).collect();
    assert!(!names.contains(&"runtime.wasmExit"));
    for needed in [
        "runtime.resetMemoryDataView",
        "runtime.wasmWrite",
        "syscall/js.valueCall",
    ] {
        assert!(names.contains(&needed), "{needed} not imported");
    }
}

/// The ABI's exports with their signatures, and nothing else but the linker's two globals.
fn check_exports(shape: &Shape) {
    assert_eq!(shape.export("mem").1, ExternalKind::Memory);
    for (name, params, results) in [
        ("run", vec![ValType::I32, ValType::I32], vec![]),
        ("resume", vec![], vec![]),
        ("getsp", vec![], vec![ValType::I32]),
    ] {
        let (_, kind, index) = shape.export(name);
        assert_eq!(*kind, ExternalKind::Func, "{name}");
        assert_eq!(
            shape.signature(shape.func_types[*index as usize]),
            (params, results),
            "signature of {name}"
        );
    }
    // No `memory`, no `_start`, nothing for tests.
    let mut extra: Vec<&str> = shape
        .exports
        .iter()
        .map(|(n, _, _)| n.as_str())
        .filter(|n| !["mem", "run", "resume", "getsp"].contains(n))
        .collect();
    extra.sort();
    assert_eq!(extra, ["__data_end", "__heap_base"]);
}
