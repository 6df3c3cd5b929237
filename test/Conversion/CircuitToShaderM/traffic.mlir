// RUN: hesper-opt %s -split-input-file --convert-circuit-to-shaderm | FileCheck %s

// Each launch carries the bytes its op must move at the least (`traffic`:
// read, written, read per cached position, window, positions), which
// `hesper-run --kernel-times` divides by the kernel's time. The numbers
// follow the op, not its tensors' full sizes: a gather reads its rows, a
// write_rows writes its rows, an expert matmul reads the experts it can
// select, attention reads per position.

// A gather of 2 rows of a q8_0 table of 100 x 64 (6800 bytes): 2 x 64 of
// its 6400 values (136 bytes) and the 2 ids (8) are read; 2 x 64 f32 are
// written.
// CHECK-LABEL: shaderm.schedule @embed
// CHECK:         shaderm.launch @embed_k0_gather grid {{.*}} {traffic = array<i64: 144, 512, 0, 0, 0>}
circuit.graph @embed(%table: tensor<100x64x!circuit.q8_0>, %ids: tensor<2x1xi32>)
    -> tensor<2x64xf32> {
  %r = circuit.gather %table ins(%ids : tensor<2x1xi32>)
      : tensor<100x64x!circuit.q8_0> -> tensor<2x64xf32> {
  ^bb0(%lane: i32, %id: i32):
    %c64 = exp.constant 64 : i32
    %col = exp.rem %lane, %c64 : i32
    %base = exp.mul %id, %c64 : i32
    %a = exp.add %base, %col : i32
    circuit.yield %a : i32
  }
  circuit.output %r : tensor<2x64xf32>
}

// -----

// A matvec reads its whole weight (32 x 64 q8_0: 64 blocks of 34 bytes)
// and x (256 bytes), and writes 32 f32.
// CHECK-LABEL: shaderm.schedule @project
// CHECK:         shaderm.launch @project_k0_matmul grid {{.*}} {traffic = array<i64: 2432, 128, 0, 0, 0>}
circuit.graph @project(%x: tensor<64xf32>, %w: tensor<32x64x!circuit.q8_0>)
    -> tensor<32xf32> {
  %y = circuit.matmul %x, %w : tensor<64xf32>, tensor<32x64x!circuit.q8_0>
      -> tensor<32xf32>
  circuit.output %y : tensor<32xf32>
}

// -----

// Attention reads q (640 bytes) and pos (4) at every run, and per cached
// position one f32 K row and one f16 V row of 80 values (480 bytes); a
// row sees 16 positions at most, of the cache's 100.
// CHECK-LABEL: shaderm.schedule @attend
// CHECK:         shaderm.launch @attend_k0_attention grid {{.*}} {traffic = array<i64: 644, 640, 480, 16, 100>}
circuit.graph @attend(%q: tensor<160xf32>, %k: tensor<8000xf32>,
                      %v: tensor<8000xf16>, %pos: tensor<1xi32>)
    -> tensor<160xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 2 : i64, kv_heads = 1 : i64,
      head_dim = 80 : i64, scale = 0.125 : f32, window = 16 : i64}
      : tensor<160xf32>, tensor<8000xf32>, tensor<8000xf16>, tensor<1xi32>
      -> tensor<160xf32>
  circuit.output %o : tensor<160xf32>
}

// -----

// write_rows reads its 2 rows of 64 f32 and the position, and writes them
// as 4 q8_0 blocks (136 bytes); nothing of the cache is read.
// CHECK-LABEL: shaderm.schedule @store
// CHECK:         shaderm.launch @store_k0_write_rows grid {{.*}} {traffic = array<i64: 516, 136, 0, 0, 0>}
circuit.graph @store(%rows: tensor<2x64xf32>, %pos: tensor<1xi32>,
                     %cache: tensor<1024x!circuit.q8_0>)
    -> tensor<1024x!circuit.q8_0> {
  %c = circuit.write_rows %rows at %pos into %cache
      : tensor<2x64xf32>, tensor<1xi32> into tensor<1024x!circuit.q8_0>
  circuit.output %c : tensor<1024x!circuit.q8_0>
}

// -----

// A scatter of 128 lanes into a buffer of 256 f32 writes 128 of them.
// CHECK-LABEL: shaderm.schedule @place
// CHECK:         shaderm.launch @place_k0_scatter grid {{.*}} {traffic = array<i64: 512, 512, 0, 0, 0>}
circuit.graph @place(%x: tensor<128xf32>, %dst: tensor<256xf32>)
    -> tensor<256xf32> {
  %r = circuit.scatter grid(128) ins(%x : tensor<128xf32>)
      into %dst : tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    %c128 = exp.constant 128 : i32
    %a = exp.add %lane, %c128 : i32
    circuit.yield %a, %v : i32, f32
  }
  circuit.output %r : tensor<256xf32>
}

// -----

// An expert matmul of 2 slots reads 2 of the 8 experts (32 x 64 f16 each:
// 4096 bytes), x (256) and the ids (8).
// CHECK-LABEL: shaderm.schedule @route
// CHECK:         shaderm.launch @route_k0_expert_matmul grid {{.*}} {traffic = array<i64: 8456, 256, 0, 0, 0>}
circuit.graph @route(%x: tensor<64xf32>, %ids: tensor<2xi32>,
                     %w: tensor<8x32x64xf16>) -> tensor<2x32xf32> {
  %y = circuit.expert_matmul %x, %ids, %w
      : tensor<64xf32>, tensor<2xi32>, tensor<8x32x64xf16> -> tensor<2x32xf32>
  circuit.output %y : tensor<2x32xf32>
}
