// The README's demo: one step of a tiny classifier head, the way a model's
// last layers are written before fusion.
//   h = rmsnorm(x) * g            (x, g: [1024])
//   logits = W h + b              (W: [512, 1024] row-major, as GGUF stores it)
//   p = softmax(logits)
// hesper-fuse turns the 9 ops into 4 kernels (RMSNorm as one reduction with
// an epilogue, the matvec with the bias in its epilogue, softmax as two
// reductions with epilogues). Run it with
//   hesper-run examples/rmsnorm-matvec-softmax.mlir --input x=random:1 \
//     --input g=random:2 --input w=random:3 --input b=random:4 --check
circuit.graph @head(%x: tensor<1024xf32> {circuit.name = "x"},
                    %g: tensor<1024xf32> {circuit.name = "g"},
                    %w: tensor<512x1024xf32> {circuit.name = "w"},
                    %b: tensor<512xf32> {circuit.name = "b"})
    -> (tensor<512xf32> {circuit.name = "p"}) {
  // RMSNorm, eps = 1e-6.
  %ss = circuit.reduce sum_sq %x : tensor<1024xf32> -> tensor<1xf32>
  %inv = circuit.map ins(%ss : tensor<1xf32>) -> tensor<1xf32> {
  ^bb0(%lane: i32, %s: f32):
    %n = exp.constant 1024.0 : f32
    %eps = exp.constant 1.0e-06 : f32
    %m = exp.div %s, %n : f32
    %me = exp.add %m, %eps : f32
    %r = exp.rsqrt %me : f32
    circuit.yield %r : f32
  }
  %h = circuit.map ins(%x, %inv, %g
                       : tensor<1024xf32>, tensor<1xf32>, tensor<1024xf32>)
      -> tensor<1024xf32> {
  ^bb0(%lane: i32, %v: f32, %r: f32, %gv: f32):
    %n = exp.mul %v, %r : f32
    %o = exp.mul %n, %gv : f32
    circuit.yield %o : f32
  }
  // Matvec plus bias.
  %y = circuit.matmul %h, %w : tensor<1024xf32>, tensor<512x1024xf32>
      -> tensor<512xf32>
  %logits = circuit.map ins(%y, %b : tensor<512xf32>, tensor<512xf32>)
      -> tensor<512xf32> {
  ^bb0(%lane: i32, %v: f32, %bv: f32):
    %s = exp.add %v, %bv : f32
    circuit.yield %s : f32
  }
  // Softmax.
  %max = circuit.reduce max %logits : tensor<512xf32> -> tensor<1xf32>
  %e = circuit.map ins(%logits, %max : tensor<512xf32>, tensor<1xf32>)
      -> tensor<512xf32> {
  ^bb0(%lane: i32, %v: f32, %m: f32):
    %d = exp.sub %v, %m : f32
    %r = exp.exp %d : f32
    circuit.yield %r : f32
  }
  %sum = circuit.reduce sum %e : tensor<512xf32> -> tensor<1xf32>
  %p = circuit.map ins(%e, %sum : tensor<512xf32>, tensor<1xf32>)
      -> tensor<512xf32> {
  ^bb0(%lane: i32, %v: f32, %s: f32):
    %r = exp.div %v, %s : f32
    circuit.yield %r : f32
  }
  circuit.output %p : tensor<512xf32>
}
