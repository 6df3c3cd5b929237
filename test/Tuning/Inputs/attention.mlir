// Decode attention for knobs.test: 8 heads of 64 over a cache of 256
// positions, 2 KV heads.
circuit.graph @attn(%q: tensor<512xf32> {circuit.name = "q"},
                    %k: tensor<32768xf32> {circuit.name = "k"},
                    %v: tensor<32768xf32> {circuit.name = "v"},
                    %pos: tensor<1xi32> {circuit.name = "pos"})
    -> tensor<512xf32> {
  %o = circuit.attention %q, %k, %v, %pos
      {heads = 8 : i64, kv_heads = 2 : i64, head_dim = 64 : i64,
       scale = 0.125 : f32}
      : tensor<512xf32>, tensor<32768xf32>, tensor<32768xf32>, tensor<1xi32>
      -> tensor<512xf32>
  circuit.output %o : tensor<512xf32>
}
