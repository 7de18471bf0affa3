// NanoBPF on the Digilent Genesys2 (xc7k325tffg900-2): clocks, resets, RGMII PHY interface, the DDR3
// controller (LiteDRAM's generated litedram_core: build/litedram/genesys2/board, make litedram) and the
// Chisel board core (NanobpfBoard: the SoC with main memory in the DDR3, the Ethernet MAC, UART, LEDs/switches).
// Port names follow Digilent's Genesys2 master XDC; constraints/genesys2.xdc must list exactly these
// ports (nanobpf-xdc-check checks it).
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
    output logic [3:0] eth_txd,
    // DDR3: two MT41J256M16 (32-bit, 1 GiB); names as litex-boards' Genesys2 platform (ddram)
    output logic [14:0] ddram_a,
    output logic [2:0]  ddram_ba,
    output logic        ddram_ras_n,
    output logic        ddram_cas_n,
    output logic        ddram_we_n,
    output logic        ddram_cs_n,
    output logic [3:0]  ddram_dm,
    inout  wire  [31:0] ddram_dq,
    inout  wire  [3:0]  ddram_dqs_p,
    inout  wire  [3:0]  ddram_dqs_n,
    output logic        ddram_clk_p,
    output logic        ddram_clk_n,
    output logic        ddram_cke,
    output logic        ddram_odt,
    output logic        ddram_reset_n
);
  logic clk_net, clk_net90, clk_core, clk_ref, clk_sys200, locked;
  nanobpf_genesys2_clocks u_clocks (
      .sysclk_p, .sysclk_n, .reset(!cpu_resetn),
      .clk_net, .clk_net90, .clk_core, .clk_ref, .clk_sys200, .locked
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

  // DDR3 through LiteDRAM. Its clock input is the board's 200 MHz clock on a BUFG (clk_sys200), not an
  // MMCM output: LiteDRAM has its own PLLE2_ADV (sys 100 MHz, sys4x 400 MHz and its 90-degree copy,
  // IDELAYCTRL's 200 MHz), and a BUFG can reach the PLL in whichever clock region Vivado places it next
  // to the DDR3 banks, while cascading it behind our MMCM would add that MMCM's jitter to the DDR3
  // clocks. Its reset is the button alone: the PLL must not wait for our MMCM. The init CPU inside
  // (VexRiscv + LiteX BIOS) initialises and levels the DDR3, then sets init_done; until then the AXI port
  // holds every access, so the boot ROM's first store to main memory waits for it. Its UART is unused.
  logic        clk_dram, rst_dram, dram_init_done, dram_init_error;
  /* verilator lint_off UNUSEDSIGNAL */
  logic        dram_pll_locked;  // LiteDRAM holds user_rst until its PLL locks
  logic [3:0]  aw_cache, ar_cache;
  logic [2:0]  aw_prot, ar_prot;
  logic [5:0]  aw_atop;
  logic        aw_lock, ar_lock;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [3:0]  b_id, r_id;
  logic        aw_ready, aw_valid, w_ready, w_valid, w_last, b_ready, b_valid;
  logic        ar_ready, ar_valid, r_ready, r_valid, r_last;
  logic [29:0] aw_addr, ar_addr;
  logic [7:0]  aw_len, ar_len;
  logic [2:0]  aw_size, ar_size;
  logic [1:0]  aw_burst, ar_burst, b_resp, r_resp;
  logic [3:0]  aw_id, ar_id;
  logic [255:0] w_data, r_data;
  logic [31:0] w_strb;
  litedram_core u_dram (
      .clk(clk_sys200), .rst(!cpu_resetn), .pll_locked(dram_pll_locked),
      .init_done(dram_init_done), .init_error(dram_init_error),
      .user_clk(clk_dram), .user_rst(rst_dram),
      .uart_rx(1'b1), .uart_tx(),
      .ddram_a, .ddram_ba, .ddram_ras_n, .ddram_cas_n, .ddram_we_n, .ddram_cs_n, .ddram_dm, .ddram_dq,
      .ddram_dqs_p, .ddram_dqs_n, .ddram_clk_p, .ddram_clk_n, .ddram_cke, .ddram_odt, .ddram_reset_n,
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
      .user_port_axi_0_rready(r_ready), .user_port_axi_0_rresp(r_resp), .user_port_axi_0_rvalid(r_valid)
  );

  NanobpfBoard u_board (
      .coreClock(clk_core), .coreReset(rst_core),
      .netClock(clk_net), .netReset(rst_net),
      .rxClock(rx_clk), .rxReset(rst_rx),
      .dramClock(clk_dram), .dramReset(rst_dram),
      .io_gmiiRx_rxd(gmii_rxd), .io_gmiiRx_rxDv(gmii_rx_dv), .io_gmiiRx_rxEr(gmii_rx_er),
      .io_gmiiTx_txd(gmii_txd), .io_gmiiTx_txEn(gmii_tx_en), .io_gmiiTx_txEr(gmii_tx_er),
      .io_uartTx(uart_rx_out), .io_switches(sw), .io_locked(locked), .io_leds(led),
      .io_dramInitDone(dram_init_done), .io_dramInitError(dram_init_error),
      .io_dram_aw_ready(aw_ready), .io_dram_aw_valid(aw_valid), .io_dram_aw_bits_id(aw_id),
      .io_dram_aw_bits_addr(aw_addr), .io_dram_aw_bits_len(aw_len), .io_dram_aw_bits_size(aw_size),
      .io_dram_aw_bits_burst(aw_burst), .io_dram_aw_bits_lock(aw_lock), .io_dram_aw_bits_cache(aw_cache),
      .io_dram_aw_bits_prot(aw_prot), .io_dram_aw_bits_atop(aw_atop),
      .io_dram_w_ready(w_ready), .io_dram_w_valid(w_valid), .io_dram_w_bits_data(w_data),
      .io_dram_w_bits_strb(w_strb), .io_dram_w_bits_last(w_last),
      .io_dram_b_ready(b_ready), .io_dram_b_valid(b_valid), .io_dram_b_bits_id(b_id), .io_dram_b_bits_resp(b_resp),
      .io_dram_ar_ready(ar_ready), .io_dram_ar_valid(ar_valid), .io_dram_ar_bits_id(ar_id),
      .io_dram_ar_bits_addr(ar_addr), .io_dram_ar_bits_len(ar_len), .io_dram_ar_bits_size(ar_size),
      .io_dram_ar_bits_burst(ar_burst), .io_dram_ar_bits_lock(ar_lock), .io_dram_ar_bits_cache(ar_cache),
      .io_dram_ar_bits_prot(ar_prot),
      .io_dram_r_ready(r_ready), .io_dram_r_valid(r_valid), .io_dram_r_bits_id(r_id),
      .io_dram_r_bits_data(r_data), .io_dram_r_bits_resp(r_resp), .io_dram_r_bits_last(r_last)
  );
endmodule
