// LiteDRAM's simulation core (litedram_gen --sim: SDRAMPHYModel, boards/genesys2/ddr3.yml `sim`, its
// module renamed litedram_sim_core by the board simulation's build) behind the real core's ports
// (build/litedram/genesys2/board's litedram_core), so the board's top runs unchanged in simulation.
//
// What stands in for the real core: its PLL makes the 100 MHz user clock from the 200 MHz input, here a
// divider by two; its init CPU (VexRiscv with LiteX's BIOS) initialises and levels the DDR3 and then
// sets init_done, here one write to the same control register (ddrctrl_init_done, INIT_DONE_ADDR from
// the simulation core's csr.json) once reset is over. The DDR3 pins stay idle, the UART is not there,
// and the simulation core's memory holds 256 MiB (addresses above it wrap: main memory is the first MiB).
module litedram_core #(
    parameter int INIT_DONE_ADDR = `NB_LITEDRAM_INIT_DONE_ADDR  // byte address of ddrctrl_init_done
) (
    input  logic         clk,
    input  logic         rst,
    output logic         pll_locked,
    output logic         init_done,
    output logic         init_error,
    output logic         user_clk,
    output logic         user_rst,
    input  logic         uart_rx,
    output logic         uart_tx,
    output logic [14:0]  ddram_a,
    output logic [2:0]   ddram_ba,
    output logic         ddram_ras_n,
    output logic         ddram_cas_n,
    output logic         ddram_we_n,
    output logic         ddram_cs_n,
    output logic [3:0]   ddram_dm,
    inout  wire  [31:0]  ddram_dq,
    inout  wire  [3:0]   ddram_dqs_p,
    inout  wire  [3:0]   ddram_dqs_n,
    output logic         ddram_clk_p,
    output logic         ddram_clk_n,
    output logic         ddram_cke,
    output logic         ddram_odt,
    output logic         ddram_reset_n,
    input  logic [29:0]  user_port_axi_0_awaddr,
    input  logic [1:0]   user_port_axi_0_awburst,
    input  logic [3:0]   user_port_axi_0_awid,
    input  logic [7:0]   user_port_axi_0_awlen,
    output logic         user_port_axi_0_awready,
    input  logic [3:0]   user_port_axi_0_awsize,
    input  logic         user_port_axi_0_awvalid,
    input  logic [255:0] user_port_axi_0_wdata,
    input  logic         user_port_axi_0_wlast,
    output logic         user_port_axi_0_wready,
    input  logic [31:0]  user_port_axi_0_wstrb,
    input  logic         user_port_axi_0_wvalid,
    output logic [3:0]   user_port_axi_0_bid,
    input  logic         user_port_axi_0_bready,
    output logic [1:0]   user_port_axi_0_bresp,
    output logic         user_port_axi_0_bvalid,
    input  logic [29:0]  user_port_axi_0_araddr,
    input  logic [1:0]   user_port_axi_0_arburst,
    input  logic [3:0]   user_port_axi_0_arid,
    input  logic [7:0]   user_port_axi_0_arlen,
    output logic         user_port_axi_0_arready,
    input  logic [3:0]   user_port_axi_0_arsize,
    input  logic         user_port_axi_0_arvalid,
    output logic [255:0] user_port_axi_0_rdata,
    output logic [3:0]   user_port_axi_0_rid,
    output logic         user_port_axi_0_rlast,
    input  logic         user_port_axi_0_rready,
    output logic [1:0]   user_port_axi_0_rresp,
    output logic         user_port_axi_0_rvalid
);
  // the PLL: 100 MHz from the 200 MHz input, locked once the button is released
  logic half = 1'b0;
  always_ff @(posedge clk) half <= !half;
  assign pll_locked = !rst;
  assign uart_tx = 1'b1;
  assign {ddram_a, ddram_ba, ddram_dm} = '0;
  assign {ddram_ras_n, ddram_cas_n, ddram_we_n, ddram_cs_n, ddram_reset_n} = '1;
  assign {ddram_clk_p, ddram_clk_n, ddram_cke, ddram_odt} = 4'b0100;

  // the init CPU's last step: ddrctrl_init_done = 1 through the control port, once
  logic [29:0] wb_adr;
  logic [31:0] wb_dat_w;
  logic        wb_cyc, wb_stb, wb_we, wb_ack;
  logic [1:0]  step = 2'd0;  // 0: in reset, 1: writing, 2: done
  /* verilator lint_off UNUSEDSIGNAL */
  logic [31:0] wb_dat_r;
  logic        wb_err;
  /* verilator lint_on UNUSEDSIGNAL */
  assign wb_adr = 30'(INIT_DONE_ADDR >> 2);
  assign wb_dat_w = 32'd1;
  assign {wb_cyc, wb_stb, wb_we} = {3{step == 2'd1}};
  always_ff @(posedge user_clk)
    if (rst) step <= 2'd0;
    else if (step == 2'd0 && !user_rst) step <= 2'd1;
    else if (step == 2'd1 && wb_ack) step <= 2'd2;

  litedram_sim_core dram (
      .clk(half), .sim_trace(1'b0), .init_done, .init_error, .user_clk, .user_rst,
      .user_port_axi_0_awaddr(user_port_axi_0_awaddr[27:0]), .user_port_axi_0_awburst, .user_port_axi_0_awid,
      .user_port_axi_0_awlen, .user_port_axi_0_awready, .user_port_axi_0_awsize, .user_port_axi_0_awvalid,
      .user_port_axi_0_wdata, .user_port_axi_0_wlast, .user_port_axi_0_wready, .user_port_axi_0_wstrb,
      .user_port_axi_0_wvalid, .user_port_axi_0_bid, .user_port_axi_0_bready, .user_port_axi_0_bresp,
      .user_port_axi_0_bvalid, .user_port_axi_0_araddr(user_port_axi_0_araddr[27:0]), .user_port_axi_0_arburst,
      .user_port_axi_0_arid, .user_port_axi_0_arlen, .user_port_axi_0_arready, .user_port_axi_0_arsize,
      .user_port_axi_0_arvalid, .user_port_axi_0_rdata, .user_port_axi_0_rid, .user_port_axi_0_rlast,
      .user_port_axi_0_rready, .user_port_axi_0_rresp, .user_port_axi_0_rvalid,
      .wb_ctrl_adr(wb_adr), .wb_ctrl_dat_w(wb_dat_w), .wb_ctrl_dat_r(wb_dat_r), .wb_ctrl_sel(4'hf),
      .wb_ctrl_cyc(wb_cyc), .wb_ctrl_stb(wb_stb), .wb_ctrl_ack(wb_ack), .wb_ctrl_we(wb_we),
      .wb_ctrl_cti(3'b000), .wb_ctrl_bte(2'b00), .wb_ctrl_err(wb_err)
  );
endmodule
