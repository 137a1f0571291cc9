//! The part of Go's `js/wasm` ABI the function uses: the imports of module `go`, the argument
//! frame they read, and JS values as Go's `syscall/js` encodes them.
//!
//! Every import is `(func (param i32))`: the `i32` is Go's stack pointer, and the import reads its
//! arguments from, and writes its results to, linear memory at fixed offsets from it (Go's
//! calling convention: word-aligned, `sp+8` onwards; a string or slice is pointer then length as
//! two 64-bit words, a slice then its capacity). Here "the stack pointer" is one static,
//! 8-aligned [`Frame`]; the export `getsp` returns its address, which the glue reads again after
//! any import that could have run Go code in between. The offsets below are those of kpt's
//! `wasm_exec.js` (kpt v1.0.0-beta.56, `internal/fnruntime/jsglue.go`, which embeds Go's file).
//!
//! A JS value crosses as a 64-bit word (`ref`): a number is its own IEEE-754 bits, anything else
//! a NaN with a type flag in the high word and an index into the glue's value table in the low
//! word (0 = NaN, 1 = 0, 2 = null, 3 = true, 4 = false, 5 = globalThis, 6 = the `Go` object).
//! The glue counts the refs it hands out; a [`Value`] gives its ref back (`finalizeRef`) when
//! dropped, as Go's finalizers do, so the input and output strings do not stay in the table.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};

#[link(wasm_import_module = "go")]
unsafe extern "C" {
    #[link_name = "runtime.wasmWrite"]
    fn wasm_write(sp: *mut u8);
    #[link_name = "runtime.resetMemoryDataView"]
    fn reset_memory_data_view(sp: *mut u8);
    #[link_name = "syscall/js.finalizeRef"]
    fn finalize_ref(sp: *mut u8);
    #[link_name = "syscall/js.stringVal"]
    fn string_val(sp: *mut u8);
    #[link_name = "syscall/js.valueGet"]
    fn value_get(sp: *mut u8);
    #[link_name = "syscall/js.valueSet"]
    fn value_set(sp: *mut u8);
    #[link_name = "syscall/js.valueIndex"]
    fn value_index(sp: *mut u8);
    #[link_name = "syscall/js.valueCall"]
    fn value_call(sp: *mut u8);
    #[link_name = "syscall/js.valuePrepareString"]
    fn value_prepare_string(sp: *mut u8);
    #[link_name = "syscall/js.valueLoadString"]
    fn value_load_string(sp: *mut u8);
}

/// Arguments and results of one import call: 72 bytes reach `valueCall`'s `ok` flag at `sp+64`.
#[repr(C, align(8))]
struct Frame(UnsafeCell<[u64; 9]>);

// The module is single-threaded (wasm32-unknown-unknown has no threads): one call at a time.
unsafe impl Sync for Frame {}

static FRAME: Frame = Frame(UnsafeCell::new([0; 9]));

/// The address the imports read their arguments from (the export `getsp`).
pub fn sp() -> *mut u8 {
    FRAME.0.get().cast()
}

fn put(offset: usize, word: u64) {
    // SAFETY: offsets are multiples of 8 below 72, inside the 8-aligned frame.
    unsafe { sp().add(offset).cast::<u64>().write(word) }
}

fn take(offset: usize) -> u64 {
    // SAFETY: as in `put`; the import wrote the word (or left the previous one).
    unsafe { sp().add(offset).cast::<u64>().read() }
}

/// A Go string or byte slice argument: address, then length.
fn put_bytes(offset: usize, address: *const u8, len: usize) {
    put(offset, address as u64);
    put(offset + 8, len as u64);
}

/// Memory pages at the last `resetMemoryDataView`: the glue keeps a `DataView` of memory, which
/// goes stale ("detached ArrayBuffer") when memory grows, so it is renewed before any import
/// after growth (Go's runtime does the same when it grows its heap).
static PAGES: AtomicUsize = AtomicUsize::new(0);

/// Calls an import with the frame, renewing the glue's view of memory first if it grew.
fn call(import: unsafe extern "C" fn(*mut u8)) {
    let pages = core::arch::wasm32::memory_size(0);
    // SAFETY: the imports only read and write the frame and the memory its arguments point to.
    unsafe {
        if PAGES.swap(pages, Ordering::Relaxed) != pages {
            reset_memory_data_view(sp());
        }
        import(sp());
    }
}

/// Go's NaN-boxing prefix of a non-number ref.
const NAN_HEAD: u64 = 0x7FF8_0000;

/// A JS value as the ABI passes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub struct Ref(u64);

impl Ref {
    const fn predefined(id: u64, type_flag: u64) -> Ref {
        Ref((NAN_HEAD | type_flag) << 32 | id)
    }
    /// `null`.
    pub const NULL: Ref = Ref::predefined(2, 0);
    /// `globalThis`.
    pub const GLOBAL: Ref = Ref::predefined(5, 1);
    /// The glue's `Go` object (`_makeFuncWrapper`, `_pendingEvent`).
    pub const GO: Ref = Ref::predefined(6, 1);

    /// A number, encoded as Go's `js.ValueOf(float64)` does.
    pub fn number(n: f64) -> Ref {
        if n == 0.0 {
            Ref::predefined(1, 0)
        } else if n.is_nan() {
            Ref::predefined(0, 0)
        } else {
            Ref(n.to_bits())
        }
    }

    fn is_boxed(self) -> bool {
        (self.0 >> 32) & NAN_HEAD == NAN_HEAD
    }

    fn type_flag(self) -> u64 {
        (self.0 >> 32) & 7
    }

    /// The number this ref holds, if it is one.
    pub fn as_number(self) -> Option<f64> {
        if !self.is_boxed() {
            Some(f64::from_bits(self.0))
        } else if self == Ref::predefined(1, 0) {
            Some(0.0)
        } else {
            None
        }
    }

    /// Whether the value is a JS object (not null, a string or a function).
    pub fn is_object(self) -> bool {
        self.is_boxed() && self.type_flag() == 1
    }
}

/// A ref the glue counted for us: returned to it (`finalizeRef`) when dropped. Numbers, null,
/// booleans and undefined are not counted and are not returned (Go's `makeValue` rule).
#[derive(Debug)]
pub struct Value(Ref);

impl Value {
    /// The ref, for use as an argument.
    pub fn get(&self) -> Ref {
        self.0
    }
}

impl Drop for Value {
    fn drop(&mut self) {
        if self.0.is_boxed() && self.0.type_flag() != 0 {
            put(8, self.0.0);
            call(finalize_ref);
        }
    }
}

/// `v[name]` (`valueGet`; result at `sp+32`).
pub fn get(v: Ref, name: &str) -> Value {
    put(8, v.0);
    put_bytes(16, name.as_ptr(), name.len());
    call(value_get);
    Value(Ref(take(32)))
}

/// `v[name] = x` (`valueSet`).
pub fn set(v: Ref, name: &str, x: Ref) {
    put(8, v.0);
    put_bytes(16, name.as_ptr(), name.len());
    put(32, x.0);
    call(value_set);
}

/// `v[i]` (`valueIndex`; result at `sp+24`).
pub fn index(v: Ref, i: u64) -> Value {
    put(8, v.0);
    put(16, i);
    call(value_index);
    Value(Ref(take(24)))
}

/// `v[method](...args)` (`valueCall`; result at `sp+56`, `ok` at `sp+64`); `Err` holds what the
/// call threw.
pub fn call_method(v: Ref, method: &str, args: &[Ref]) -> Result<Value, Value> {
    put(8, v.0);
    put_bytes(16, method.as_ptr(), method.len());
    put(32, args.as_ptr() as u64);
    put(40, args.len() as u64);
    put(48, args.len() as u64);
    call(value_call);
    let result = Value(Ref(take(56)));
    if take(64) & 0xFF == 1 {
        Ok(result)
    } else {
        Err(result)
    }
}

/// A JS string holding `text` (`stringVal`, which decodes UTF-8; result at `sp+24`).
pub fn string(text: &[u8]) -> Value {
    put_bytes(8, text.as_ptr(), text.len());
    call(string_val);
    Value(Ref(take(24)))
}

/// `String(v)` as UTF-8 bytes: `valuePrepareString` (an encoded copy and its length, at
/// `sp+16` and `sp+24`) then `valueLoadString` into a buffer of that length — what Go's
/// `js.Value.String()` does.
pub fn utf8(v: Ref) -> Vec<u8> {
    put(8, v.0);
    call(value_prepare_string);
    let encoded = Value(Ref(take(16)));
    let len = usize::try_from(take(24)).expect("a wasm32 string fits in memory");
    let mut bytes = vec![0u8; len];
    put(8, encoded.get().0);
    put_bytes(16, bytes.as_mut_ptr(), len);
    put(32, len as u64);
    call(value_load_string);
    bytes
}

/// Writes to the host's file descriptor `fd` (`runtime.wasmWrite`: node's `fs.writeSync`).
pub fn write(fd: u64, bytes: &[u8]) {
    put(8, fd);
    put_bytes(16, bytes.as_ptr(), bytes.len());
    call(wasm_write);
}
