// Testbench wrapper for sim/cocotb/eth_rgmii: the Genesys2 Ethernet path from the RGMII pins to the
// link self-test and back, as the board top wires it (boards/genesys2/rtl/nanobpf_genesys2_top.sv,
// NanobpfBoard): nanobpf_rgmii_phy (IDELAYE2/IDDR/ODDR, behavioural models from
// boards/genesys2/sim/xilinx7_models.sv) <-> EthMac (GMII; receive side in the PHY's clock, the rest
// in clk_tx) <-> EthEcho. Clocks come from cocotb; `arst` is released per domain by the board's
// reset synchronisers. The MAC's counters are brought out as one packed vector, counter i in bits
// 32*i +: 32 (hw/defs/soc.toml enum eth_counter).
module rgmii_link_tb (
    input  logic             clk_tx,       // 125 MHz: MAC datapath, RGMII transmit data
    input  logic             clk_tx90,     // clk_tx 2 ns later: RGMII transmit clock
    input  logic             clk_ref,      // 200 MHz: IDELAYCTRL
    input  logic             arst,         // asynchronous, active high
    input  logic             echo_enable,  // in clk_tx (SW0 on the board)
    input  logic             rgmii_rxc,
    input  logic             rgmii_rx_ctl,
    input  logic [3:0]       rgmii_rxd,
    output logic             rgmii_txc,
    output logic             rgmii_tx_ctl,
    output logic [3:0]       rgmii_txd,
    output logic [15:0][31:0] counters
);
  logic rst_tx, rst_ref, rst_rx;
  nanobpf_reset_sync u_rst_tx  (.clk(clk_tx),  .arst, .rst(rst_tx));
  nanobpf_reset_sync u_rst_ref (.clk(clk_ref), .arst, .rst(rst_ref));

  logic       rx_clk, gmii_rx_dv, gmii_rx_er;
  logic [7:0] gmii_rxd;
  logic       gmii_tx_en, gmii_tx_er;
  logic [7:0] gmii_txd;
  nanobpf_rgmii_phy u_phy (
      .clk_ref, .rst_ref, .clk_tx, .clk_tx90,
      .rgmii_rxc, .rgmii_rx_ctl, .rgmii_rxd, .rgmii_txc, .rgmii_tx_ctl, .rgmii_txd,
      .rx_clk, .gmii_rxd, .gmii_rx_dv, .gmii_rx_er, .gmii_txd, .gmii_tx_en, .gmii_tx_er
  );
  nanobpf_reset_sync u_rst_rx (.clk(rx_clk), .arst, .rst(rst_rx));

  logic        rx_ready, rx_valid, rx_last, tx_ready, tx_valid, tx_last;
  logic [63:0] rx_data, tx_data;
  logic [7:0]  rx_keep, tx_keep;
  EthMac u_mac (
      .clock(clk_tx), .reset(rst_tx), .io_rxClock(rx_clk), .io_rxReset(rst_rx),
      .io_gmiiRx_rxd(gmii_rxd), .io_gmiiRx_rxDv(gmii_rx_dv), .io_gmiiRx_rxEr(gmii_rx_er),
      .io_gmiiTx_txd(gmii_txd), .io_gmiiTx_txEn(gmii_tx_en), .io_gmiiTx_txEr(gmii_tx_er),
      .io_rx_ready(rx_ready), .io_rx_valid(rx_valid), .io_rx_bits_data(rx_data),
      .io_rx_bits_keep(rx_keep), .io_rx_bits_last(rx_last),
      .io_tx_ready(tx_ready), .io_tx_valid(tx_valid), .io_tx_bits_data(tx_data),
      .io_tx_bits_keep(tx_keep), .io_tx_bits_last(tx_last),
      .io_counters_0(counters[0]), .io_counters_1(counters[1]), .io_counters_2(counters[2]),
      .io_counters_3(counters[3]), .io_counters_4(counters[4]), .io_counters_5(counters[5]),
      .io_counters_6(counters[6]), .io_counters_7(counters[7]), .io_counters_8(counters[8]),
      .io_counters_9(counters[9]), .io_counters_10(counters[10]), .io_counters_11(counters[11]),
      .io_counters_12(counters[12]), .io_counters_13(counters[13]), .io_counters_14(counters[14]),
      .io_counters_15(counters[15])
  );
  EthEcho u_echo (
      .clock(clk_tx), .reset(rst_tx), .io_enable(echo_enable),
      .io_in_ready(rx_ready), .io_in_valid(rx_valid), .io_in_bits_data(rx_data),
      .io_in_bits_keep(rx_keep), .io_in_bits_last(rx_last),
      .io_out_ready(tx_ready), .io_out_valid(tx_valid), .io_out_bits_data(tx_data),
      .io_out_bits_keep(tx_keep), .io_out_bits_last(tx_last)
  );
endmodule
