// The loss of two rows of logits over a vocabulary of 4, as the training
// graphs write it: each row's target picks its logit by index, so the
// targets declare their bound (circuit.bound, ArgRoles.h).
circuit.graph @pick(%logits: tensor<8xf32> {circuit.name = "logits"},
                    %targets: tensor<2xi32> {circuit.name = "targets", circuit.role = "targets", circuit.bound = 4 : i64})
    -> tensor<2xf32> {
  %picked = circuit.gather %logits ins(%targets : tensor<2xi32>) : tensor<8xf32> -> tensor<2xf32> {
  ^bb0(%lane: i32, %t: i32):
    %four = exp.constant 4 : i32
    %row = exp.mul %lane, %four : i32
    %addr = exp.add %row, %t : i32
    circuit.yield %addr : i32
  }
  circuit.output %picked : tensor<2xf32>
}
