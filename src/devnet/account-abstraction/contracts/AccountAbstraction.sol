// SPDX-License-Identifier: GPL-3.0
pragma solidity ^0.8.23;

// ERC-4337 v0.7 on the devnet L2, compiled from the sources published on npm (@account-abstraction/contracts
// 0.7.0), not copied: the EntryPoint and the sample SimpleAccountFactory (which deploys SimpleAccount proxies).
// The EntryPoint is GPL-3.0, so this entry file is too; the factory and account are MIT.
import "@account-abstraction/contracts/core/EntryPoint.sol";
import "@account-abstraction/contracts/samples/SimpleAccountFactory.sol";
