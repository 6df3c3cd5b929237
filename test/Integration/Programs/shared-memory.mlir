// A sum over 64 threads through workgroup memory (a workgroup attribution)
// with a barrier between the halving steps, and private memory (a private
// attribution) holding each thread's input and its square. x[i] = i:
// sum 2016, sum of squares 85344. The result goes to a host-registered
// buffer; a second kernel module reads it back from device memory to check
// that two gpu.modules load and run side by side.
//
// REQUIRES: vulkan
// RUN: hesper-run %s --backend=vulkan --validation | FileCheck %s
// The same on the CPU target (the threads of a workgroup as fibers,
// subgroups of one lane):
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu | FileCheck %s %}

// CHECK: data =
// CHECK-NEXT: [2016, 85344]
// CHECK: data =
// CHECK-NEXT: [4032, 170688]

module attributes {gpu.container_module} {
  gpu.module @reduce {
    gpu.func @sum(%x: memref<64xf32>, %out: memref<2xf32>)
        workgroup(%sums: memref<64xf32, #gpu.address_space<workgroup>>,
                  %squares: memref<64xf32, #gpu.address_space<workgroup>>)
        private(%mine: memref<2xf32, #gpu.address_space<private>>)
        kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<64xf32>
      %sq = arith.mulf %v, %v : f32
      memref.store %v, %mine[%c0] : memref<2xf32, #gpu.address_space<private>>
      memref.store %sq, %mine[%c1] : memref<2xf32, #gpu.address_space<private>>
      %a = memref.load %mine[%c0] : memref<2xf32, #gpu.address_space<private>>
      %b = memref.load %mine[%c1] : memref<2xf32, #gpu.address_space<private>>
      memref.store %a, %sums[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %b, %squares[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      // s = 32, 16, ..., 1: threads below s add the element s further on.
      scf.for %step = %c0 to %c32 step %c1 iter_args(%s = %c32) -> (index) {
        %active = arith.cmpi ult, %t, %s : index
        scf.if %active {
          %o = arith.addi %t, %s : index
          %p = memref.load %sums[%t] : memref<64xf32, #gpu.address_space<workgroup>>
          %q = memref.load %sums[%o] : memref<64xf32, #gpu.address_space<workgroup>>
          %pq = arith.addf %p, %q : f32
          memref.store %pq, %sums[%t] : memref<64xf32, #gpu.address_space<workgroup>>
          %r = memref.load %squares[%t] : memref<64xf32, #gpu.address_space<workgroup>>
          %u = memref.load %squares[%o] : memref<64xf32, #gpu.address_space<workgroup>>
          %ru = arith.addf %r, %u : f32
          memref.store %ru, %squares[%t] : memref<64xf32, #gpu.address_space<workgroup>>
        }
        gpu.barrier
        %c2 = arith.constant 2 : index
        %next = arith.divui %s, %c2 : index
        %done = arith.cmpi eq, %next, %c0 : index
        %n = arith.select %done, %c0, %next : index
        scf.yield %n : index
      }
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        %total = memref.load %sums[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
        %total2 = memref.load %squares[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
        memref.store %total, %out[%c0] : memref<2xf32>
        memref.store %total2, %out[%c1] : memref<2xf32>
      }
      gpu.return
    }
  }

  gpu.module @twice {
    gpu.func @double(%in: memref<2xf32>, %out: memref<2xf32>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %in[%t] : memref<2xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %out[%t] : memref<2xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %x = memref.alloc() : memref<64xf32>
    scf.for %i = %c0 to %c64 step %c1 {
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      memref.store %f, %x[%i] : memref<64xf32>
    }
    %out = memref.alloc() : memref<2xf32>
    %ux = memref.cast %x : memref<64xf32> to memref<*xf32>
    %uo = memref.cast %out : memref<2xf32> to memref<*xf32>
    gpu.host_register %ux : memref<*xf32>
    gpu.host_register %uo : memref<*xf32>
    gpu.launch_func @reduce::@sum blocks in (%c1, %c1, %c1)
        threads in (%c64, %c1, %c1)
        args(%x : memref<64xf32>, %out : memref<2xf32>)
    call @printMemrefF32(%uo) : (memref<*xf32>) -> ()
    %d = gpu.alloc () : memref<2xf32>
    gpu.launch_func @twice::@double blocks in (%c1, %c1, %c1)
        threads in (%c2, %c1, %c1)
        args(%out : memref<2xf32>, %d : memref<2xf32>)
    %back = memref.alloc() : memref<2xf32>
    gpu.memcpy %back, %d : memref<2xf32>, memref<2xf32>
    %ub = memref.cast %back : memref<2xf32> to memref<*xf32>
    call @printMemrefF32(%ub) : (memref<*xf32>) -> ()
    gpu.dealloc %d : memref<2xf32>
    gpu.host_unregister %ux : memref<*xf32>
    gpu.host_unregister %uo : memref<*xf32>
    memref.dealloc %x : memref<64xf32>
    memref.dealloc %out : memref<2xf32>
    memref.dealloc %back : memref<2xf32>
    return
  }
  func.func private @printMemrefF32(memref<*xf32>) attributes { llvm.emit_c_interface }
}
