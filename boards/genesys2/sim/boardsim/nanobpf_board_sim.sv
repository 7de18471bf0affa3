// The Genesys2 board simulated from its pins (make board-sim, sim/board/board_main.cpp): the board's
// top, nanobpf_genesys2_top, unchanged (RGMII I/O primitives, the Ethernet MAC in its clocks, the
// clock-domain crossings, the SoC with its datapath, main memory through DramBridge), with the
// behavioural Xilinx primitives (../xilinx7_models.sv, NANOBPF_BOARD_SIM) and LiteDRAM's simulation
// core in place of the DDR3 controller (litedram_core.sv here). Never given to Vivado.
//
// Ports are the board's pins the harness drives and watches, plus what stands in for the MMCM: its four
// output clocks (clk_net, clk_net90, clk_core, clk_ref, as nanobpf_genesys2_clocks names them) and its
// lock, which the harness makes at board.toml's frequencies (xilinx7_models.sv's MMCME2_BASE reads
// them here). The DDR3 pins are left open: the simulation core has none.
module nanobpf_board_sim (
    input  logic       sysclk,       // the board's 200 MHz oscillator (its differential pair as one)
    input  logic [3:0] mmcm_clk,     // {clk_ref, clk_core, clk_net90, clk_net}
    input  logic       mmcm_locked,
    input  logic       cpu_resetn,
    input  logic [7:0] sw,
    output logic [7:0] led,
    output logic       uart_rx_out,
    output logic       eth_phyrst_n,
    input  logic       eth_rxck,
    input  logic       eth_rxctl,
    input  logic [3:0] eth_rxd,
    output logic       eth_txck,
    output logic       eth_txctl,
    output logic [3:0] eth_txd
);
  /* verilator lint_off UNUSEDSIGNAL */
  wire [31:0] ddram_dq;
  wire [3:0]  ddram_dqs_p, ddram_dqs_n;
  logic [14:0] ddram_a;
  logic [2:0]  ddram_ba;
  logic [3:0]  ddram_dm;
  logic ddram_ras_n, ddram_cas_n, ddram_we_n, ddram_cs_n, ddram_clk_p, ddram_clk_n, ddram_cke, ddram_odt, ddram_reset_n;
  /* verilator lint_on UNUSEDSIGNAL */
  nanobpf_genesys2_top u_top (
      .sysclk_p(sysclk), .sysclk_n(!sysclk), .cpu_resetn, .uart_rx_out, .uart_tx_in(1'b1), .led, .sw,
      .eth_phyrst_n, .eth_rxck, .eth_rxctl, .eth_rxd, .eth_txck, .eth_txctl, .eth_txd,
      .ddram_a, .ddram_ba, .ddram_ras_n, .ddram_cas_n, .ddram_we_n, .ddram_cs_n, .ddram_dm, .ddram_dq,
      .ddram_dqs_p, .ddram_dqs_n, .ddram_clk_p, .ddram_clk_n, .ddram_cke, .ddram_odt, .ddram_reset_n
  );
endmodule
