// NanoBPF on the Digilent Genesys2 (xc7k325tffg900-2): clocks, resets, RGMII PHY interface, and the
// Chisel board core (NanobpfBoard: the SoC, the Ethernet MAC, UART, LEDs/switches).
// Port names follow Digilent's Genesys2 master XDC; constraints/genesys2.xdc must list exactly these
// ports (sw/tools/nanobpf-xdc-check checks it).
module nanobpf_genesys2_top #(
    // IDELAYE2 taps on the RGMII receive data/control (78 ps each with the 200 MHz reference).
    parameter int RX_IDELAY_TAPS = 0
) (
    input  logic       sysclk_p,      // 200 MHz differential system clock
    input  logic       sysclk_n,
    input  logic       cpu_resetn,    // CPU RESET button, active low
    // Digilent names the UART nets from the USB-UART bridge's side:
    output logic       uart_rx_out,   // FPGA -> bridge (its RXD): the console
    /* verilator lint_off UNUSEDSIGNAL */
    input  logic       uart_tx_in,    // bridge (its TXD) -> FPGA: unused, the console is output only
    /* verilator lint_on UNUSEDSIGNAL */
    output logic [7:0] led,
    input  logic [7:0] sw,
    // RTL8211E RGMII
    output logic       eth_phyrst_n,
    input  logic       eth_rxck,
    input  logic       eth_rxctl,
    input  logic [3:0] eth_rxd,
    output logic       eth_txck,
    output logic       eth_txctl,
    output logic [3:0] eth_txd
);
  logic clk_net, clk_net90, clk_core, clk_ref, locked;
  nanobpf_genesys2_clocks u_clocks (
      .sysclk_p, .sysclk_n, .reset(!cpu_resetn),
      .clk_net, .clk_net90, .clk_core, .clk_ref, .locked
  );

  // Resets: asserted asynchronously (button or MMCM not locked), released synchronously per domain.
  logic rst_async, rst_core, rst_net, rst_ref, rst_rx;
  assign rst_async = !cpu_resetn || !locked;
  nanobpf_reset_sync u_rst_core (.clk(clk_core), .arst(rst_async), .rst(rst_core));
  nanobpf_reset_sync u_rst_net  (.clk(clk_net),  .arst(rst_async), .rst(rst_net));
  nanobpf_reset_sync u_rst_ref  (.clk(clk_ref),  .arst(rst_async), .rst(rst_ref));

  // The PHY is held in reset for 10 ms after the clocks lock (RTL8211E needs >= 10 ms).
  logic [21:0] phy_rst_cnt;
  always_ff @(posedge clk_ref or posedge rst_ref)
    if (rst_ref) phy_rst_cnt <= '0;
    else if (!phy_rst_cnt[21]) phy_rst_cnt <= phy_rst_cnt + 1'b1;
  assign eth_phyrst_n = phy_rst_cnt[21];  // 2^21 cycles of 200 MHz = 10.5 ms

  logic       rx_clk, gmii_rx_dv, gmii_rx_er;
  logic [7:0] gmii_rxd;
  logic       gmii_tx_en, gmii_tx_er;
  logic [7:0] gmii_txd;
  nanobpf_rgmii_phy #(.RX_IDELAY_TAPS(RX_IDELAY_TAPS)) u_rgmii (
      .clk_ref, .rst_ref, .clk_tx(clk_net), .clk_tx90(clk_net90),
      .rgmii_rxc(eth_rxck), .rgmii_rx_ctl(eth_rxctl), .rgmii_rxd(eth_rxd),
      .rgmii_txc(eth_txck), .rgmii_tx_ctl(eth_txctl), .rgmii_txd(eth_txd),
      .rx_clk, .gmii_rxd, .gmii_rx_dv, .gmii_rx_er,
      .gmii_txd, .gmii_tx_en, .gmii_tx_er
  );
  nanobpf_reset_sync u_rst_rx (.clk(rx_clk), .arst(rst_async), .rst(rst_rx));

  NanobpfBoard u_board (
      .coreClock(clk_core), .coreReset(rst_core),
      .netClock(clk_net), .netReset(rst_net),
      .rxClock(rx_clk), .rxReset(rst_rx),
      .io_gmiiRx_rxd(gmii_rxd), .io_gmiiRx_rxDv(gmii_rx_dv), .io_gmiiRx_rxEr(gmii_rx_er),
      .io_gmiiTx_txd(gmii_txd), .io_gmiiTx_txEn(gmii_tx_en), .io_gmiiTx_txEr(gmii_tx_er),
      .io_uartTx(uart_rx_out), .io_switches(sw), .io_locked(locked), .io_leds(led)
  );
endmodule
