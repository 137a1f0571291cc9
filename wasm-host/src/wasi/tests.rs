//! Tests of the sandbox's buffers and memory checks.

use super::*;

fn stdio(chunks: &[&[u8]], capacity: usize) -> Stdio {
    Stdio::new(
        "cutover",
        chunks.iter().map(|c| c.to_vec()).collect(),
        capacity,
        capacity,
    )
}

#[test]
fn stdin_is_read_across_chunks_and_a_read_chunk_is_dropped() {
    let mut io = stdio(&[b"abc", b"de", b"f"], 16);
    let mut buf = [0u8; 4];
    assert_eq!(io.read_into(&mut buf), 4);
    assert_eq!(&buf, b"abcd");
    // The first chunk was read whole: it is gone; the second is half read.
    assert_eq!((io.stdin.len(), io.read), (2, 1));
    // Kept, emptied, for stdout to fill.
    assert_eq!(io.spare.len(), 1);
    assert!(io.spare[0].is_empty() && io.spare[0].capacity() >= 3);
    assert_eq!(io.read_into(&mut buf), 2);
    assert_eq!(&buf[..2], b"ef");
    assert!(io.stdin.is_empty());
    assert_eq!(io.read_into(&mut buf), 0);
}

#[test]
fn output_past_its_capacity_is_refused_whole_and_named() {
    let mut io = stdio(&[], 8);
    io.write(1, b"12345678").unwrap();
    let err = io.write(1, b"9").unwrap_err();
    let full = err.downcast_ref::<OutputFull>().expect("OutputFull");
    assert_eq!(full.stream, "output");
    assert_eq!(io.take_stdout().concat(), b"12345678");
    io.write(2, b"1234").unwrap();
    let err = io.write(2, b"56789").unwrap_err();
    assert_eq!(
        err.downcast_ref::<OutputFull>().unwrap().stream,
        "diagnostics"
    );
    assert_eq!(*io.stderr().lock().unwrap(), b"1234");
}

#[test]
fn only_the_three_streams_are_open_until_closed() {
    let mut io = stdio(&[], 8);
    assert!((0..3).all(|fd| io.is_open(fd)));
    assert!(!io.is_open(3) && !io.is_open(-1));
    io.open[1] = false;
    assert!(!io.is_open(1));
}

#[test]
fn guest_ranges_past_the_memory_are_faults() {
    let memory = [0u8; 16];
    assert_eq!(range(&memory, 8, 8), Some(8..16));
    assert_eq!(range(&memory, 8, 9), None);
    assert_eq!(range(&memory, -1, 1), None);
    // An iovec array whose buffer runs past the memory.
    let mut memory = [0u8; 32];
    memory[0..4].copy_from_slice(&16u32.to_le_bytes());
    memory[4..8].copy_from_slice(&17u32.to_le_bytes());
    assert_eq!(iovecs(&memory, 0, 1), Err(errno::FAULT));
    memory[4..8].copy_from_slice(&16u32.to_le_bytes());
    let ranges = iovecs(&memory, 0, 1).unwrap();
    assert_eq!((ranges.len(), ranges[0].clone()), (1, 16..32));
    // Too many iovecs, or a negative count, is invalid before any is read.
    assert_eq!(iovecs(&memory, 0, IOV_MAX + 1), Err(errno::INVAL));
    assert_eq!(iovecs(&memory, 0, -1), Err(errno::INVAL));
}

#[test]
fn stdout_fills_read_chunks_of_stdin_before_new_ones() {
    let mut io = Stdio::new("cutover", vec![vec![7u8; 10], vec![8u8; 10]], 1 << 30, 64);
    let mut buf = [0u8; 20];
    assert_eq!(io.read_into(&mut buf), 20);
    let spare: Vec<*const u8> = io.spare.iter().map(|c| c.as_ptr()).collect();
    let out: Vec<u8> = (0..25u8).collect();
    io.write(1, &out[..4]).unwrap();
    io.write(1, &out[4..]).unwrap();
    let chunks = io.take_stdout();
    // The two spare chunks (the last one read first), then a new one for the rest.
    let used: Vec<*const u8> = chunks.iter().map(|c| c.as_ptr()).collect();
    assert_eq!(&used[..2], &[spare[1], spare[0]]);
    assert_eq!(chunks.len(), 3);
    assert!(chunks[2].capacity() >= CHUNK);
    assert_eq!(chunks.concat(), out);
}
