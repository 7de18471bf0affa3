// One CVA6 core with its AXI master port flattened into plain signals, so that the Chisel SoC can
// instantiate it as a BlackBox (`nanobpf.soc.Cva6Tile`). It has no parameters: Verilator builds it once
// as a hierarchical block and reuses it for every core, which is why the hart id is a port.
// Physical memory attributes and the reset vector come from the generated `nanobpf_soc_pkg`.
module nanobpf_cva6_tile (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic [63:0] hart_id_i,
  input  logic        ipi_i,        // machine software interrupt (CLINT msip)
  input  logic        time_irq_i,   // machine timer interrupt (CLINT mtimecmp)
  // AXI4 master (id 4, address 64, data 64; user signals dropped)
  output logic        axi_aw_valid,
  input  logic        axi_aw_ready,
  output logic [3:0]  axi_aw_bits_id,
  output logic [63:0] axi_aw_bits_addr,
  output logic [7:0]  axi_aw_bits_len,
  output logic [2:0]  axi_aw_bits_size,
  output logic [1:0]  axi_aw_bits_burst,
  output logic        axi_aw_bits_lock,
  output logic [3:0]  axi_aw_bits_cache,
  output logic [2:0]  axi_aw_bits_prot,
  output logic [5:0]  axi_aw_bits_atop,
  output logic        axi_w_valid,
  input  logic        axi_w_ready,
  output logic [63:0] axi_w_bits_data,
  output logic [7:0]  axi_w_bits_strb,
  output logic        axi_w_bits_last,
  input  logic        axi_b_valid,
  output logic        axi_b_ready,
  input  logic [3:0]  axi_b_bits_id,
  input  logic [1:0]  axi_b_bits_resp,
  output logic        axi_ar_valid,
  input  logic        axi_ar_ready,
  output logic [3:0]  axi_ar_bits_id,
  output logic [63:0] axi_ar_bits_addr,
  output logic [7:0]  axi_ar_bits_len,
  output logic [2:0]  axi_ar_bits_size,
  output logic [1:0]  axi_ar_bits_burst,
  output logic        axi_ar_bits_lock,
  output logic [3:0]  axi_ar_bits_cache,
  output logic [2:0]  axi_ar_bits_prot,
  input  logic        axi_r_valid,
  output logic        axi_r_ready,
  input  logic [3:0]  axi_r_bits_id,
  input  logic [63:0] axi_r_bits_data,
  input  logic [1:0]  axi_r_bits_resp,
  input  logic        axi_r_bits_last
);
  /*verilator hier_block*/
  ariane_axi::req_t  req;
  ariane_axi::resp_t resp;

  cva6 #(.ArianeCfg(nanobpf_soc_pkg::ARIANE_CFG)) core (
    .clk_i, .rst_ni,
    .boot_addr_i  (nanobpf_soc_pkg::RESET_VECTOR),
    .hart_id_i,
    .irq_i        (2'b00),   // no external interrupt controller yet
    .ipi_i,
    .time_irq_i,
    .debug_req_i  (1'b0),    // no debug module
    .cvxif_req_o  (),
    .cvxif_resp_i ('0),
    .axi_req_o    (req),
    .axi_resp_i   (resp)
  );

  assign axi_aw_valid      = req.aw_valid;
  assign axi_aw_bits_id    = req.aw.id;
  assign axi_aw_bits_addr  = req.aw.addr;
  assign axi_aw_bits_len   = req.aw.len;
  assign axi_aw_bits_size  = req.aw.size;
  assign axi_aw_bits_burst = req.aw.burst;
  assign axi_aw_bits_lock  = req.aw.lock;
  assign axi_aw_bits_cache = req.aw.cache;
  assign axi_aw_bits_prot  = req.aw.prot;
  assign axi_aw_bits_atop  = req.aw.atop;
  assign axi_w_valid       = req.w_valid;
  assign axi_w_bits_data   = req.w.data;
  assign axi_w_bits_strb   = req.w.strb;
  assign axi_w_bits_last   = req.w.last;
  assign axi_b_ready       = req.b_ready;
  assign axi_ar_valid      = req.ar_valid;
  assign axi_ar_bits_id    = req.ar.id;
  assign axi_ar_bits_addr  = req.ar.addr;
  assign axi_ar_bits_len   = req.ar.len;
  assign axi_ar_bits_size  = req.ar.size;
  assign axi_ar_bits_burst = req.ar.burst;
  assign axi_ar_bits_lock  = req.ar.lock;
  assign axi_ar_bits_cache = req.ar.cache;
  assign axi_ar_bits_prot  = req.ar.prot;
  assign axi_r_ready       = req.r_ready;

  always_comb begin
    resp          = '0;
    resp.aw_ready = axi_aw_ready;
    resp.w_ready  = axi_w_ready;
    resp.b_valid  = axi_b_valid;
    resp.b.id     = axi_b_bits_id;
    resp.b.resp   = axi_b_bits_resp;
    resp.ar_ready = axi_ar_ready;
    resp.r_valid  = axi_r_valid;
    resp.r.id     = axi_r_bits_id;
    resp.r.data   = axi_r_bits_data;
    resp.r.resp   = axi_r_bits_resp;
    resp.r.last   = axi_r_bits_last;
  end
endmodule
