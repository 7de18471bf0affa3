// Test bench of nanobpf.dram.DramBridge in front of LiteDRAM's simulation core (litedram_gen --sim:
// SDRAMPHYModel, boards/genesys2/ddr3.yml `sim`). The bridge's bus port is in `clock` (the core clock);
// LiteDRAM runs on dram_clk and hands the bridge its user_clk/user_rst. The test bench reaches LiteDRAM's
// control registers through its wishbone port (to set init_done, as the board's init CPU does).
// force_err replaces LiteDRAM's B and R responses with SLVERR on their way to the bridge (the DRAM
// still does the access): how an AXI error reaches the bridge, which LiteDRAM itself never sends.
module dram_bridge_tb (
    input  logic        clock,
    input  logic        reset,
    input  logic        dram_clk,
    input  logic        force_err,
    output logic        io_bus_req_ready,
    input  logic        io_bus_req_valid,
    input  logic [31:0] io_bus_req_bits_addr,
    input  logic        io_bus_req_bits_write,
    input  logic [63:0] io_bus_req_bits_wdata,
    input  logic [7:0]  io_bus_req_bits_wstrb,
    output logic        io_bus_resp_valid,
    output logic [63:0] io_bus_resp_bits_rdata,
    output logic        io_bus_resp_bits_err,
    output logic        init_done,
    output logic        init_error,
    output logic        user_clk,
    output logic        user_rst,
    input  logic [29:0] wb_adr,
    input  logic [31:0] wb_dat_w,
    output logic [31:0] wb_dat_r,
    input  logic        wb_we,
    input  logic        wb_cyc,
    input  logic        wb_stb,
    output logic        wb_ack
);
  localparam int A = 28;  // LiteDRAM's address bits (dram.properties addr_bits; the test checks)
  logic         aw_ready, aw_valid, w_ready, w_valid, w_last, b_ready, b_valid, ar_ready, ar_valid;
  logic         r_ready, r_valid, r_last;
  logic [A-1:0] aw_addr, ar_addr;
  logic [7:0]   aw_len, ar_len;
  logic [2:0]   aw_size, ar_size;
  logic [1:0]   aw_burst, ar_burst, b_resp, r_resp;
  logic [3:0]   aw_id, ar_id, b_id, r_id;
  logic [255:0] w_data, r_data;
  logic [31:0]  w_strb;

  DramBridge bridge (
      .clock, .reset,
      .io_bus_req_ready, .io_bus_req_valid, .io_bus_req_bits_addr, .io_bus_req_bits_write,
      .io_bus_req_bits_wdata, .io_bus_req_bits_wstrb,
      .io_bus_resp_valid, .io_bus_resp_bits_rdata, .io_bus_resp_bits_err,
      .io_dramClock(user_clk), .io_dramReset(user_rst),
      .io_axi_aw_ready(aw_ready), .io_axi_aw_valid(aw_valid), .io_axi_aw_bits_id(aw_id),
      .io_axi_aw_bits_addr(aw_addr), .io_axi_aw_bits_len(aw_len), .io_axi_aw_bits_size(aw_size),
      .io_axi_aw_bits_burst(aw_burst), .io_axi_aw_bits_lock(), .io_axi_aw_bits_cache(),
      .io_axi_aw_bits_prot(), .io_axi_aw_bits_atop(),
      .io_axi_w_ready(w_ready), .io_axi_w_valid(w_valid), .io_axi_w_bits_data(w_data),
      .io_axi_w_bits_strb(w_strb), .io_axi_w_bits_last(w_last),
      .io_axi_b_ready(b_ready), .io_axi_b_valid(b_valid), .io_axi_b_bits_id(b_id),
      .io_axi_b_bits_resp(force_err ? 2'b10 : b_resp),
      .io_axi_ar_ready(ar_ready), .io_axi_ar_valid(ar_valid), .io_axi_ar_bits_id(ar_id),
      .io_axi_ar_bits_addr(ar_addr), .io_axi_ar_bits_len(ar_len), .io_axi_ar_bits_size(ar_size),
      .io_axi_ar_bits_burst(ar_burst), .io_axi_ar_bits_lock(), .io_axi_ar_bits_cache(),
      .io_axi_ar_bits_prot(),
      .io_axi_r_ready(r_ready), .io_axi_r_valid(r_valid), .io_axi_r_bits_id(r_id),
      .io_axi_r_bits_data(r_data), .io_axi_r_bits_resp(force_err ? 2'b10 : r_resp),
      .io_axi_r_bits_last(r_last)
  );

  litedram_core dram (
      .clk(dram_clk), .sim_trace(1'b0),
      .init_done, .init_error, .user_clk, .user_rst,
      .user_port_axi_0_awaddr(aw_addr), .user_port_axi_0_awburst(aw_burst), .user_port_axi_0_awid(aw_id),
      .user_port_axi_0_awlen(aw_len), .user_port_axi_0_awready(aw_ready), .user_port_axi_0_awsize({1'b0, aw_size}),
      .user_port_axi_0_awvalid(aw_valid),
      .user_port_axi_0_wdata(w_data), .user_port_axi_0_wlast(w_last), .user_port_axi_0_wready(w_ready),
      .user_port_axi_0_wstrb(w_strb), .user_port_axi_0_wvalid(w_valid),
      .user_port_axi_0_bid(b_id), .user_port_axi_0_bready(b_ready), .user_port_axi_0_bresp(b_resp),
      .user_port_axi_0_bvalid(b_valid),
      .user_port_axi_0_araddr(ar_addr), .user_port_axi_0_arburst(ar_burst), .user_port_axi_0_arid(ar_id),
      .user_port_axi_0_arlen(ar_len), .user_port_axi_0_arready(ar_ready), .user_port_axi_0_arsize({1'b0, ar_size}),
      .user_port_axi_0_arvalid(ar_valid),
      .user_port_axi_0_rdata(r_data), .user_port_axi_0_rid(r_id), .user_port_axi_0_rlast(r_last),
      .user_port_axi_0_rready(r_ready), .user_port_axi_0_rresp(r_resp), .user_port_axi_0_rvalid(r_valid),
      .wb_ctrl_adr(wb_adr), .wb_ctrl_dat_w(wb_dat_w), .wb_ctrl_dat_r(wb_dat_r), .wb_ctrl_sel(4'hf),
      .wb_ctrl_cyc(wb_cyc), .wb_ctrl_stb(wb_stb), .wb_ctrl_ack(wb_ack), .wb_ctrl_we(wb_we),
      .wb_ctrl_cti(3'b000), .wb_ctrl_bte(2'b00), .wb_ctrl_err()
  );
endmodule
