# NanoBPF on the Digilent Genesys2 Rev. H (xc7k325tffg900-2): constraints for exactly the ports of
# boards/genesys2/rtl/nanobpf_genesys2_top.sv (nanobpf-xdc-check checks that).
#
# Pin facts (PACKAGE_PIN, IOSTANDARD) from Digilent's master XDC: github.com/Digilent/digilent-xdc,
# Genesys-2-Master.xdc ("general .xdc for the Genesys 2 Rev. H"), cross-checked against Digilent's
# board files (github.com/Digilent/vivado-boards, new/board_files/genesys2/H/1.2/part0_pins.xml and
# board.xml), alexforencich/verilog-ethernet example/Genesys2/fpga/fpga.xdc and
# openhwgroup/cva6 corev_apu/fpga/constraints/genesys-2.xdc: every source that lists a pin below agrees.

## Configuration: bank 0 and the configuration bank 14 run at 3.3 V; boot from the quad SPI flash.
set_property CFGBVS VCCO [current_design]
set_property CONFIG_VOLTAGE 3.3 [current_design]
set_property CONFIG_MODE SPIx4 [current_design]
set_property BITSTREAM.CONFIG.SPI_BUSWIDTH 4 [current_design]
# 33 MHz nominal: conservative for the wide tolerance of the internal configuration oscillator.
set_property BITSTREAM.CONFIG.CONFIGRATE 33 [current_design]
set_property BITSTREAM.GENERAL.COMPRESS TRUE [current_design]

## 200 MHz system clock (bank 33, MRCC pair). No DIFF_TERM: bank 33 runs at 1.5 V (RGMII), and an HP
## bank's LVDS termination needs 1.8 V.
set_property -dict { PACKAGE_PIN AD12  IOSTANDARD LVDS } [get_ports { sysclk_p }]
set_property -dict { PACKAGE_PIN AD11  IOSTANDARD LVDS } [get_ports { sysclk_n }]
create_clock -name sysclk -period 5.000 [get_ports sysclk_p]

## CPU RESET button (bank 14, 3.3 V), active low.
set_property -dict { PACKAGE_PIN R19   IOSTANDARD LVCMOS33 } [get_ports { cpu_resetn }]

## USB-UART bridge (bank 12, 3.3 V).
# Digilent names these nets from the bridge's side: uart_rx_out (Y23) is the FPGA's output into the
# bridge's RXD (the console), uart_tx_in (Y20) the bridge's TXD into the FPGA (Digilent's board.xml maps
# the UART's TxD to Y23 and RxD to Y20; the verilog-ethernet and CVA6 Genesys2 designs do the same).
set_property -dict { PACKAGE_PIN Y23   IOSTANDARD LVCMOS33 } [get_ports { uart_rx_out }]
set_property -dict { PACKAGE_PIN Y20   IOSTANDARD LVCMOS33 } [get_ports { uart_tx_in }]

## LEDs (bank 14, 3.3 V).
set_property -dict { PACKAGE_PIN T28   IOSTANDARD LVCMOS33 } [get_ports { led[0] }]
set_property -dict { PACKAGE_PIN V19   IOSTANDARD LVCMOS33 } [get_ports { led[1] }]
set_property -dict { PACKAGE_PIN U30   IOSTANDARD LVCMOS33 } [get_ports { led[2] }]
set_property -dict { PACKAGE_PIN U29   IOSTANDARD LVCMOS33 } [get_ports { led[3] }]
set_property -dict { PACKAGE_PIN V20   IOSTANDARD LVCMOS33 } [get_ports { led[4] }]
set_property -dict { PACKAGE_PIN V26   IOSTANDARD LVCMOS33 } [get_ports { led[5] }]
set_property -dict { PACKAGE_PIN W24   IOSTANDARD LVCMOS33 } [get_ports { led[6] }]
set_property -dict { PACKAGE_PIN W23   IOSTANDARD LVCMOS33 } [get_ports { led[7] }]

## Switches. sw[5:0] sit in banks 15-17 on VADJ (1.2 V as shipped: LVCMOS12; change these six if the
## VADJ jumper is moved), sw[7:6] in bank 14 at 3.3 V.
set_property -dict { PACKAGE_PIN G19   IOSTANDARD LVCMOS12 } [get_ports { sw[0] }]
set_property -dict { PACKAGE_PIN G25   IOSTANDARD LVCMOS12 } [get_ports { sw[1] }]
set_property -dict { PACKAGE_PIN H24   IOSTANDARD LVCMOS12 } [get_ports { sw[2] }]
set_property -dict { PACKAGE_PIN K19   IOSTANDARD LVCMOS12 } [get_ports { sw[3] }]
set_property -dict { PACKAGE_PIN N19   IOSTANDARD LVCMOS12 } [get_ports { sw[4] }]
set_property -dict { PACKAGE_PIN P19   IOSTANDARD LVCMOS12 } [get_ports { sw[5] }]
set_property -dict { PACKAGE_PIN P26   IOSTANDARD LVCMOS33 } [get_ports { sw[6] }]
set_property -dict { PACKAGE_PIN P27   IOSTANDARD LVCMOS33 } [get_ports { sw[7] }]

## RTL8211E Ethernet PHY. The reset is in bank 12 (3.3 V); the RGMII pins are in bank 33 (1.5 V).
set_property -dict { PACKAGE_PIN AH24  IOSTANDARD LVCMOS33 } [get_ports { eth_phyrst_n }]
set_property -dict { PACKAGE_PIN AG10  IOSTANDARD LVCMOS15 } [get_ports { eth_rxck }]
set_property -dict { PACKAGE_PIN AH11  IOSTANDARD LVCMOS15 } [get_ports { eth_rxctl }]
set_property -dict { PACKAGE_PIN AJ14  IOSTANDARD LVCMOS15 } [get_ports { eth_rxd[0] }]
set_property -dict { PACKAGE_PIN AH14  IOSTANDARD LVCMOS15 } [get_ports { eth_rxd[1] }]
set_property -dict { PACKAGE_PIN AK13  IOSTANDARD LVCMOS15 } [get_ports { eth_rxd[2] }]
set_property -dict { PACKAGE_PIN AJ13  IOSTANDARD LVCMOS15 } [get_ports { eth_rxd[3] }]
# Fast edges for the 125 MHz DDR outputs (the default slow slew eats into a 4 ns bit time).
set_property -dict { PACKAGE_PIN AE10  IOSTANDARD LVCMOS15  SLEW FAST } [get_ports { eth_txck }]
set_property -dict { PACKAGE_PIN AK14  IOSTANDARD LVCMOS15  SLEW FAST } [get_ports { eth_txctl }]
set_property -dict { PACKAGE_PIN AJ12  IOSTANDARD LVCMOS15  SLEW FAST } [get_ports { eth_txd[0] }]
set_property -dict { PACKAGE_PIN AK11  IOSTANDARD LVCMOS15  SLEW FAST } [get_ports { eth_txd[1] }]
set_property -dict { PACKAGE_PIN AJ11  IOSTANDARD LVCMOS15  SLEW FAST } [get_ports { eth_txd[2] }]
set_property -dict { PACKAGE_PIN AK10  IOSTANDARD LVCMOS15  SLEW FAST } [get_ports { eth_txd[3] }]

## DDR3: two MT41J256M16 on a 32-bit bus (banks 32, 33, 34 at 1.5 V), driven by LiteDRAM's K7 PHY.
## Pins, I/O standards, SLEW FAST, VCCAUX_IO HIGH and bank 34's internal VREF exactly as litex-boards'
## Genesys2 platform (litex_boards/platforms/digilent_genesys2.py, PyPI litex-boards 2023.12: the `ddram`
## resource and Platform.__init__), the platform LiteDRAM's own Genesys2 target is built with.
set_property INTERNAL_VREF 0.750 [get_iobanks 34]
set_property -dict { PACKAGE_PIN AC12  IOSTANDARD SSTL15 } [get_ports { ddram_a[0] }]
set_property -dict { PACKAGE_PIN AE8   IOSTANDARD SSTL15 } [get_ports { ddram_a[1] }]
set_property -dict { PACKAGE_PIN AD8   IOSTANDARD SSTL15 } [get_ports { ddram_a[2] }]
set_property -dict { PACKAGE_PIN AC10  IOSTANDARD SSTL15 } [get_ports { ddram_a[3] }]
set_property -dict { PACKAGE_PIN AD9   IOSTANDARD SSTL15 } [get_ports { ddram_a[4] }]
set_property -dict { PACKAGE_PIN AA13  IOSTANDARD SSTL15 } [get_ports { ddram_a[5] }]
set_property -dict { PACKAGE_PIN AA10  IOSTANDARD SSTL15 } [get_ports { ddram_a[6] }]
set_property -dict { PACKAGE_PIN AA11  IOSTANDARD SSTL15 } [get_ports { ddram_a[7] }]
set_property -dict { PACKAGE_PIN Y10   IOSTANDARD SSTL15 } [get_ports { ddram_a[8] }]
set_property -dict { PACKAGE_PIN Y11   IOSTANDARD SSTL15 } [get_ports { ddram_a[9] }]
set_property -dict { PACKAGE_PIN AB8   IOSTANDARD SSTL15 } [get_ports { ddram_a[10] }]
set_property -dict { PACKAGE_PIN AA8   IOSTANDARD SSTL15 } [get_ports { ddram_a[11] }]
set_property -dict { PACKAGE_PIN AB12  IOSTANDARD SSTL15 } [get_ports { ddram_a[12] }]
set_property -dict { PACKAGE_PIN AA12  IOSTANDARD SSTL15 } [get_ports { ddram_a[13] }]
set_property -dict { PACKAGE_PIN AH9   IOSTANDARD SSTL15 } [get_ports { ddram_a[14] }]
set_property -dict { PACKAGE_PIN AE9   IOSTANDARD SSTL15 } [get_ports { ddram_ba[0] }]
set_property -dict { PACKAGE_PIN AB10  IOSTANDARD SSTL15 } [get_ports { ddram_ba[1] }]
set_property -dict { PACKAGE_PIN AC11  IOSTANDARD SSTL15 } [get_ports { ddram_ba[2] }]
set_property -dict { PACKAGE_PIN AE11  IOSTANDARD SSTL15 } [get_ports { ddram_ras_n }]
set_property -dict { PACKAGE_PIN AF11  IOSTANDARD SSTL15 } [get_ports { ddram_cas_n }]
set_property -dict { PACKAGE_PIN AG13  IOSTANDARD SSTL15 } [get_ports { ddram_we_n }]
set_property -dict { PACKAGE_PIN AH12  IOSTANDARD SSTL15 } [get_ports { ddram_cs_n }]
set_property -dict { PACKAGE_PIN AD4   IOSTANDARD SSTL15 } [get_ports { ddram_dm[0] }]
set_property -dict { PACKAGE_PIN AF3   IOSTANDARD SSTL15 } [get_ports { ddram_dm[1] }]
set_property -dict { PACKAGE_PIN AH4   IOSTANDARD SSTL15 } [get_ports { ddram_dm[2] }]
set_property -dict { PACKAGE_PIN AF8   IOSTANDARD SSTL15 } [get_ports { ddram_dm[3] }]
set_property -dict { PACKAGE_PIN AD3   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[0] }]
set_property -dict { PACKAGE_PIN AC2   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[1] }]
set_property -dict { PACKAGE_PIN AC1   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[2] }]
set_property -dict { PACKAGE_PIN AC5   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[3] }]
set_property -dict { PACKAGE_PIN AC4   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[4] }]
set_property -dict { PACKAGE_PIN AD6   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[5] }]
set_property -dict { PACKAGE_PIN AE6   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[6] }]
set_property -dict { PACKAGE_PIN AC7   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[7] }]
set_property -dict { PACKAGE_PIN AF2   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[8] }]
set_property -dict { PACKAGE_PIN AE1   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[9] }]
set_property -dict { PACKAGE_PIN AF1   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[10] }]
set_property -dict { PACKAGE_PIN AE4   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[11] }]
set_property -dict { PACKAGE_PIN AE3   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[12] }]
set_property -dict { PACKAGE_PIN AE5   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[13] }]
set_property -dict { PACKAGE_PIN AF5   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[14] }]
set_property -dict { PACKAGE_PIN AF6   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[15] }]
set_property -dict { PACKAGE_PIN AJ4   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[16] }]
set_property -dict { PACKAGE_PIN AH6   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[17] }]
set_property -dict { PACKAGE_PIN AH5   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[18] }]
set_property -dict { PACKAGE_PIN AH2   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[19] }]
set_property -dict { PACKAGE_PIN AJ2   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[20] }]
set_property -dict { PACKAGE_PIN AJ1   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[21] }]
set_property -dict { PACKAGE_PIN AK1   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[22] }]
set_property -dict { PACKAGE_PIN AJ3   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[23] }]
set_property -dict { PACKAGE_PIN AF7   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[24] }]
set_property -dict { PACKAGE_PIN AG7   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[25] }]
set_property -dict { PACKAGE_PIN AJ6   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[26] }]
set_property -dict { PACKAGE_PIN AK6   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[27] }]
set_property -dict { PACKAGE_PIN AJ8   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[28] }]
set_property -dict { PACKAGE_PIN AK8   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[29] }]
set_property -dict { PACKAGE_PIN AK5   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[30] }]
set_property -dict { PACKAGE_PIN AK4   IOSTANDARD SSTL15_T_DCI } [get_ports { ddram_dq[31] }]
set_property -dict { PACKAGE_PIN AD2   IOSTANDARD DIFF_SSTL15 } [get_ports { ddram_dqs_p[0] }]
set_property -dict { PACKAGE_PIN AD1   IOSTANDARD DIFF_SSTL15 } [get_ports { ddram_dqs_n[0] }]
set_property -dict { PACKAGE_PIN AG4   IOSTANDARD DIFF_SSTL15 } [get_ports { ddram_dqs_p[1] }]
set_property -dict { PACKAGE_PIN AG3   IOSTANDARD DIFF_SSTL15 } [get_ports { ddram_dqs_n[1] }]
set_property -dict { PACKAGE_PIN AG2   IOSTANDARD DIFF_SSTL15 } [get_ports { ddram_dqs_p[2] }]
set_property -dict { PACKAGE_PIN AH1   IOSTANDARD DIFF_SSTL15 } [get_ports { ddram_dqs_n[2] }]
set_property -dict { PACKAGE_PIN AH7   IOSTANDARD DIFF_SSTL15 } [get_ports { ddram_dqs_p[3] }]
set_property -dict { PACKAGE_PIN AJ7   IOSTANDARD DIFF_SSTL15 } [get_ports { ddram_dqs_n[3] }]
set_property -dict { PACKAGE_PIN AB9   IOSTANDARD DIFF_SSTL15 } [get_ports { ddram_clk_p }]
set_property -dict { PACKAGE_PIN AC9   IOSTANDARD DIFF_SSTL15 } [get_ports { ddram_clk_n }]
set_property -dict { PACKAGE_PIN AJ9   IOSTANDARD SSTL15 } [get_ports { ddram_cke }]
set_property -dict { PACKAGE_PIN AK9   IOSTANDARD SSTL15 } [get_ports { ddram_odt }]
set_property -dict { PACKAGE_PIN AG5   IOSTANDARD LVCMOS15 } [get_ports { ddram_reset_n }]
set_property SLEW FAST [get_ports {ddram_*}]
set_property VCCAUX_IO HIGH [get_ports {ddram_*}]

## RGMII timing, 1000 Mb/s (8 ns clock, data on both edges). Numbers: RGMII v2.0 (HP, 2002), the
## "integrated delay" rows (reproduced e.g. in Microchip's KSZ9031RNX datasheet, table 7-1):
## transmitter TsetupT/TholdT >= 1.2 ns, receiver TsetupR/TholdR >= 1.0 ns.
#
# Receive. The Genesys2 straps the RTL8211E's RXDLY: the PHY delays its RX clock by 2 ns and the PCB
# adds no skew (Digilent's Genesys2 reference manual and schematic, as cited in openhwgroup/cva6
# issue 658; verilog-ethernet's Genesys2 example runs with 0 IDELAY taps), so eth_rxck arrives centred
# in the data eye. Xilinx's centre-aligned DDR input template: max = T/2 - setup (the data belongs to
# the next, opposite edge), min = hold. RX_IDELAY_TAPS of the top (78 ps per tap) trims a delay that
# is off. On a board without RXDLY the clock arrives edge-aligned (TskewT +-0.5 ns): switch to Xilinx's
# edge-aligned DDR input template and give the data about 2 ns of RX_IDELAY_TAPS (26 taps).
create_clock -name eth_rxck -period 8.000 [get_ports eth_rxck]
set rgmii_rx_setup 1.2
set rgmii_rx_hold  1.2
set_input_delay -clock eth_rxck -max [expr {4.0 - $rgmii_rx_setup}] [get_ports {eth_rxctl eth_rxd[*]}]
set_input_delay -clock eth_rxck -min $rgmii_rx_hold                 [get_ports {eth_rxctl eth_rxd[*]}]
set_input_delay -clock eth_rxck -max [expr {4.0 - $rgmii_rx_setup}] [get_ports {eth_rxctl eth_rxd[*]}] -clock_fall -add_delay
set_input_delay -clock eth_rxck -min $rgmii_rx_hold                 [get_ports {eth_rxctl eth_rxd[*]}] -clock_fall -add_delay

# Transmit. TXDLY is not strapped, so the FPGA delays the clock itself: eth_txck is forwarded by an
# ODDR (D1=1, D2=0) on the 90-degree clock while the data ODDRs run on the 0-degree clock, which puts
# each txck edge 2 ns into its data bit. Vivado checks the same-edge setup and the opposite-edge hold
# (2 ns each) against the PHY's TsetupR/TholdR. If a board straps TXDLY, forward the clock at 0 degrees
# and constrain the outputs as edge-aligned instead.
create_generated_clock -name eth_txck -source [get_pins u_rgmii/txck_oddr/C] -multiply_by 1 [get_ports eth_txck]
set rgmii_tx_setup 1.0
set rgmii_tx_hold  1.0
set_output_delay -clock eth_txck -max $rgmii_tx_setup            [get_ports {eth_txctl eth_txd[*]}]
set_output_delay -clock eth_txck -min [expr {-$rgmii_tx_hold}]   [get_ports {eth_txctl eth_txd[*]}]
set_output_delay -clock eth_txck -max $rgmii_tx_setup            [get_ports {eth_txctl eth_txd[*]}] -clock_fall -add_delay
set_output_delay -clock eth_txck -min [expr {-$rgmii_tx_hold}]   [get_ports {eth_txctl eth_txd[*]}] -clock_fall -add_delay

## Clock domains. The MMCM outputs (Vivado derives them from sysclk) are related, but the design
## crosses between them only through synchronisers, so they are timed as asynchronous:
## CLKOUT2 clk_core 50 MHz; CLKOUT0/1 clk_net/clk_net90 125 MHz (with the forwarded eth_txck);
## CLKOUT3 clk_ref 200 MHz (IDELAYCTRL, PHY reset timer); the PHY's receive clock; and LiteDRAM's PLL
## (Vivado derives its outputs from sysclk through the BUFG clk_sys200: sys 100 MHz = user_clk, the
## DramBridge's DRAM side, sys4x 400 MHz and its 90-degree copy, the 200 MHz IDELAYCTRL reference),
## timed together among themselves, reached from clk_core only through DramBridge's async FIFOs.
set_clock_groups -name async_domains -asynchronous \
    -group [get_clocks -of_objects [get_pins u_clocks/mmcm/CLKOUT2]] \
    -group [get_clocks -include_generated_clocks -of_objects [get_pins {u_clocks/mmcm/CLKOUT0 u_clocks/mmcm/CLKOUT1}]] \
    -group [get_clocks -of_objects [get_pins u_clocks/mmcm/CLKOUT3]] \
    -group [get_clocks -include_generated_clocks eth_rxck] \
    -group [get_clocks -of_objects [get_pins u_dram/PLLE2_ADV/CLKOUT*]]

## Slow or asynchronous pins: synchronised (or only seen by humans) inside, nothing to time. LiteDRAM's
## init_done/init_error cross into clk_core through two-flop synchronisers in NanobpfBoard.
set_false_path -from [get_ports {cpu_resetn sw[*] uart_tx_in}]
set_false_path -to   [get_ports {led[*] uart_rx_out eth_phyrst_n}]

## LiteDRAM's synchronisers, constrained as LiteX's own Vivado flow does for them
## (litex/build/xilinx/vivado.py, _build_false_path_constraints, PyPI litex 2024.12): MultiReg inputs
## (mr_ff) and the asynchronous presets of AsyncResetSynchronizer (ars_ff1/2) are false paths; 2 ns for
## the metastability stage between ars_ff1 and ars_ff2.
set_false_path -quiet -through [get_nets -hierarchical -filter {mr_ff == TRUE}]
set_false_path -quiet -to [get_pins -filter {REF_PIN_NAME == PRE} -of_objects [get_cells -hierarchical -filter {ars_ff1 == TRUE || ars_ff2 == TRUE}]]
set_max_delay 2 -quiet -from [get_pins -filter {REF_PIN_NAME == C} -of_objects [get_cells -hierarchical -filter {ars_ff1 == TRUE}]] -to [get_pins -filter {REF_PIN_NAME == D} -of_objects [get_cells -hierarchical -filter {ars_ff2 == TRUE}]]
